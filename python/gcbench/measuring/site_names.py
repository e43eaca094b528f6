"""Names for what the diagnosis counted by number while a loop ran (`diagnose._Table`):
types by their qualified names and packages, allocation sites as the `path:line` a reader
finds, in the package they belong to; and which collector this interpreter has. Loaded
after the loop, when a diagnosis is written: before it, its functions and tables would be
objects in the heap whose schedule is explained.

How it works, and why: docs/internals.md, `gcbench.measuring.diagnose`.
"""

from __future__ import annotations

import functools
import os
import sys
from collections import Counter

TYPE_CHECKING = False  # typing's own flag without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Protocol

    class _Table(Protocol):
        """What is named of `diagnose._Table` (this module imports nothing of the diagnosis)."""

        names: list[str]
        modules: list[object]

        def decode(self, key: int) -> tuple[Sequence[tuple[str, int]] | None, int]: ...

# the files of a user's own loop and the folders of their project (`diagnose.USER_FILES` and
# `USER_DIRS`, which the diagnosis passes: this module imports nothing of it)
User = tuple[frozenset[str] | set[str], frozenset[str] | set[str]]
NOBODY: User = (frozenset(), frozenset())
TOP = 12  # entries kept per table
UNTRACED = "untraced"  # made before sites were traced
NAMED = ("jax", "jaxlib", "equinox", "flax", "optax", "numpy", "gcbench")
# paths by os.path: pathlib (with re, enum, urllib and ipaddress, where the interpreter has not
# loaded them) would put 2,000 objects in the heap of the user's process, whose loop may run again
_GCBENCH_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # the package, all of it
# gcbench's own training loop (what a user's loop does around the step): "loop"; the rest of
# gcbench (the backends' step code) is "gcbench".
_LOOP_FILES = (os.path.join(_GCBENCH_DIR, "measuring", "worker.py"),)


def collector_model() -> dict:
    """Which collector this interpreter has, and what the analysis means on it."""
    v = sys.version_info
    if (v.major, v.minor) == (3, 14) and v.micro < 5:
        return {"model": "incremental", "generations": 2,
                "note": "Python 3.14.0-3.14.4 collect incrementally in two generations (young and old, the old "
                        "one scanned in increments); the 'full collection' figures count collections of the old "
                        "generation, and promotion means surviving a young collection."}
    return {"model": "generational", "generations": 3,
            "note": "three generations; a full collection scans the whole oldest generation and runs once "
                    "threshold[2] collections of generation 1 have passed and the promotions since the last "
                    "full collection exceed a quarter of the oldest generation"}


def _module_of(tp: type) -> object:
    return type.__dict__["__module__"].__get__(tp) if isinstance(tp, type) else None


def type_name(tp: type) -> str:
    """`dict`, `jaxlib._jax.ArrayImpl`: the name of a type, whatever its class does with
    attribute access (a metaclass may make `__module__` anything)."""
    return named_type(type.__dict__["__qualname__"].__get__(tp) if isinstance(tp, type) else repr(tp), _module_of(tp))


def named_type(qualname: str, module: object) -> str:
    """A type's name from its `__qualname__` and `__module__` (as the diagnosis kept them)."""
    module = module if isinstance(module, str) else "builtins"
    return qualname if module == "builtins" else f"{module}.{qualname}"


def module_package(module: object) -> str:
    """The package of a type's `__module__`: one of NAMED, `builtins`, or `other`."""
    root = (module if isinstance(module, str) else "builtins").split(".")[0]
    if root in NAMED:
        return root
    return "builtins" if root in ("builtins", "") else "other"


_STDLIB = os.path.dirname(os.path.realpath(os.__file__))  # where tracemalloc, os and the rest of it are
_STDLIB_OR_GENERATED = ("<", _STDLIB)  # made once: the frame walks below allocate nothing


def file_package(filename: str, user: User = NOBODY) -> str | None:
    """The named package a source file belongs to (`loop` for gcbench's own training loop,
    `user` for the `user`'s files and the modules in their folders), or None."""
    filename = _real(filename)
    if filename in user[0]:
        return "user"
    if filename in _LOOP_FILES:
        return "loop"
    if filename.startswith(_GCBENCH_DIR):
        return "gcbench"
    parts = filename.replace("\\", "/").split("/")
    installed = "site-packages" in parts or "dist-packages" in parts
    if not installed and not filename.startswith(_STDLIB) and \
            any(filename.startswith(folder + os.sep) for folder in user[1]):
        return "user"  # the user's own module beside their loop
    return _installed_package(parts)


def _installed_package(parts: list[str]) -> str | None:
    """The named package an installed file belongs to: the folder (or module) right after
    site-packages (or dist-packages), where it is one of NAMED."""
    marker = next((m for m in ("site-packages", "dist-packages") if m in parts), None)
    if marker is None or parts.index(marker) + 1 >= len(parts):
        return None
    root = parts[parts.index(marker) + 1].removesuffix(".py")
    return root if root in NAMED else None


# gcbench's own measuring code: never a site (`gcbench.measure`'s own objects are gcbench's, not the loop's)
_HARNESS = tuple(os.path.join(_GCBENCH_DIR, *name.split("/")) for name in (
    "measuring/diagnose.py", "measuring/diagnostic_run.py", "measuring/probe.py", "analysing/gc_causes.py",
    "user_loop.py", "budget/plugin.py", "core/machineload.py", "measuring/site_names.py"))
OWN = "gcbench's own objects"  # a site no frame outside the harness and the standard library explains


@functools.lru_cache(maxsize=4096)
def _real(filename: str) -> str:
    """A source file's real path: in an environment gcbench is imported through a link."""
    return os.path.realpath(filename) if filename and not filename.startswith("<") else filename


def _frame_kind(filename: str, user: User) -> str | None:
    """None for frames that do not decide a site (the standard library, this harness)."""
    filename = _real(filename)
    if filename.startswith(_HARNESS):
        return None
    if (filename.startswith(_STDLIB) and "-packages" not in filename) or filename.startswith("<"):
        return None
    return file_package(filename, user) or "other"


def site_path(filename: str) -> str:
    """A source file as a reader finds it: inside its installed package (`equinox/_jit.py`,
    under site-packages), inside gcbench (`gcbench/measuring/worker.py`), else its full path with the
    home folder as `~`."""
    real = _real(filename)
    parts = real.replace("\\", "/").split("/")
    for marker in ("site-packages", "dist-packages"):
        if marker in parts[:-1]:
            return "/".join(parts[parts.index(marker) + 1:])
    gcbench_root = os.path.dirname(_GCBENCH_DIR)
    if real.startswith(_GCBENCH_DIR + os.sep):
        return os.path.relpath(real, gcbench_root).replace(os.sep, "/")
    home = os.path.expanduser("~")
    return "~" + real[len(home):] if home not in ("", "/") and real.startswith(home + os.sep) else real


def made_by_gcbench(frames: Sequence[tuple[str, int]] | None) -> bool:
    """Whether an object's tracemalloc `frames` (newest first) are gcbench's own measuring code's."""
    for filename, _ in frames or ():  # the first frame outside the standard library decides
        real = _real(filename)
        if real.startswith(_HARNESS):
            return True
        if not real.startswith(_STDLIB_OR_GENERATED) or "-packages" in real:
            return False
    return False


def sites_of(frames: Sequence[tuple[str, int]], user: User = NOBODY) -> tuple[tuple[str, str], str | None]:
    """Where an object was allocated, from its tracemalloc frames (newest first):

    - (package, "path:line") of the innermost frame outside the standard library and this
      harness, the path as `site_path` gives it; its package is one of NAMED, `loop`
      (gcbench's own training loop), `user` (the files of a user's loop) or `other`;
    - "path:line" of the innermost frame in the `user`'s own files: the line of
      the user's loop that led to the allocation, however deep inside a library it
      happened; None when no user file is among the frames."""
    site = next(((kind, f"{site_path(filename)}:{lineno}") for filename, lineno in frames
                 if (kind := _frame_kind(filename, user)) is not None), None)
    if site is None:  # only the harness and the standard library: gcbench's own, never named as the loop's
        site = ("gcbench", OWN) if any(_real(f).startswith(_HARNESS) for f, _ in frames) else \
            ("other", f"{site_path(frames[0][0])}:{frames[0][1]}")
    mine = next((f"{site_path(filename)}:{lineno}" for filename, lineno in frames if _real(filename) in user[0]),
                None)
    return site, mine


def named_counts(types: Counter, sites: Counter, untraced: int, total: int, table: _Table, user: User) -> dict:
    """Objects counted by number while a loop ran (`diagnose._Counts`: by type number, and
    by `_Table.key` where traced) as tables of names: by type, by package, by site
    (`package path:line`, UNTRACED for those without frames), by the user's own line where
    one is among the frames, and by site and type; each of the TOP largest but by package."""
    by_type: Counter = Counter()
    by_package: Counter = Counter()
    by_site: Counter = Counter()
    by_user_site: Counter = Counter()
    by_site_type: Counter = Counter()
    def name(no: int) -> str:
        return named_type(table.names[no], table.modules[no])

    for no, n in types.items():
        by_type[name(no)] += n
        by_package[module_package(table.modules[no])] += n
    traced = 0
    for key, n in sites.items():
        frames, no = table.decode(key)
        if not frames:  # made before tracing started
            by_site[UNTRACED] += n
            continue
        (package, site), mine = sites_of(frames, user)
        traced += n
        by_site[f"{package} {site}"] += n
        by_site_type[f"{site} ({name(no)})"] += n
        if mine is not None:
            by_user_site[mine] += n
    if untraced:
        by_site[UNTRACED] += untraced
    out = {"total": total, "traced": traced, "by_type": dict(by_type.most_common(TOP)),
           "by_package": dict(by_package.most_common()), "by_site": dict(by_site.most_common(TOP))}
    if by_user_site:
        out["by_user_site"] = dict(by_user_site.most_common(TOP))
    if by_site_type:
        out["by_site_type"] = dict(by_site_type.most_common(TOP))
    return out
