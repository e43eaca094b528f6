"""A user's own script (one that measures with `gcbench.measure` and calls `m.save()`), run
as repeats of one cell: N fresh processes, each saving into the results folder that
GCBENCH_RESULTS names; with two sides (`--base` and `--head`: git refs, or folders), the
two versions' runs interleaved in one period (base r0, head r0, base r1, ...), each side
into a folder of its own, so that base against head carries no run term and needs no
committed baseline (docs/usage.md, "Your own loop in CI").
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import shlex
import subprocess
import sys
import time
from collections.abc import Callable

from ..core import files
from ..core.checks import RESULTS_ENV
from ..core.errors import UsageError, option
from .options import ScriptRunsOutcome

TAIL = 3  # lines of a failing script's standard error said in its one line


@dataclasses.dataclass(frozen=True)
class Side:
    """One version of the script: its name (`base`, `head`, or `script` alone), the folder
    the script runs from (its files at a commit, or a folder as it is) and where its results go."""

    name: str
    root: pathlib.Path
    results: pathlib.Path
    label: str  # what the user named it (a ref and its commit, or a folder)


def sides(script: str, base: str | None, head: str | None, out: pathlib.Path) -> tuple[pathlib.Path, list[Side]]:
    """The script's path inside its project, and the sides to run it on: the project as it
    is, or the base's and the head's (each a folder, or a git ref of the repository that
    holds the script, whose files are exported at that commit)."""
    path = pathlib.Path(script).expanduser()
    if not path.is_file():
        raise UsageError(f"{option('script')} {script}: no such file")
    if (base is None) != (head is None):
        raise UsageError(f"{option('base')} and {option('head')} go together: the two versions of the script to run "
                         "against each other")
    if base is None or head is None:
        return path.resolve(), [Side("script", path.resolve().parent, out, str(path))]
    if base == head:
        raise UsageError(f"{option('base')} and {option('head')} are both {base!r}: a version run against itself says "
                         "nothing")
    root = _project_root(path.resolve())
    relative = path.resolve().relative_to(root)
    return relative, [_side(name, ref, root, out / name) for name, ref in (("base", base), ("head", head))]


def _project_root(script: pathlib.Path) -> pathlib.Path:
    from ..running import gitrepo

    return gitrepo.toplevel(script.parent) or script.parent


def _side(name: str, ref: str, root: pathlib.Path, results: pathlib.Path) -> Side:
    """A side named by a folder (the project's copy as it is) or a git ref (its files at that commit)."""
    folder = pathlib.Path(ref).expanduser()
    if folder.is_dir():
        return Side(name, folder.resolve(), results, str(folder))
    from ..running import gitrepo

    commit = gitrepo.commit(root, ref)
    return Side(name, gitrepo.export(root, commit.sha, "script"), results, f"{ref} ({commit.short})")


def _script_of(side: Side, script: pathlib.Path) -> pathlib.Path:
    """The script in a side's version of the code (an absolute path: the same in both)."""
    target = side.root / script if not script.is_absolute() else script
    if not target.is_file():
        raise UsageError(f"{side.name} ({side.label}) has no {script}: the script must be in both versions")
    return target


def run(script: pathlib.Path, run_sides: list[Side], repeats: int, script_args: list[str],
        say: Callable[[str], None], timeout: float | None = None) -> ScriptRunsOutcome:
    """Each side's script `repeats` times, interleaved, in fresh processes; the results each
    saved. A script that fails, or saves nothing, stops the run with one line (exit 2): what
    ran before it is kept."""
    if repeats < 1:
        raise UsageError(f"{option('repeats')} {repeats}: at least 1 (3 or more for an interval)")
    for side in run_sides:
        files.make_folder(side.results, "results folder")
    total, done = repeats * len(run_sides), 0
    for r in range(repeats):
        for side in run_sides:
            target = _script_of(side, script)
            before = set(side.results.glob("*.json"))
            start = time.monotonic()
            proc = _run_once(target, side, script_args, timeout)
            done += 1
            took = time.monotonic() - start
            where = f"{side.name} r{r}" if len(run_sides) > 1 else f"r{r}"
            kept = side.results.parent if len(run_sides) > 1 else side.results
            saved = _saved(target, where, proc, set(side.results.glob("*.json")) - before, done - 1, kept)
            say(f"[{done}/{total}] {where}: ok in {took:.1f} s ({', '.join(sorted(p.name for p in saved))})")
    return ScriptRunsOutcome([side.results for side in run_sides], done)


def _saved(target: pathlib.Path, where: str, proc, saved: set[pathlib.Path], before: int,
           kept: pathlib.Path) -> set[pathlib.Path]:
    """What one run of the script saved; a `UsageError` of one line where it failed (its
    last lines said) or saved nothing (`before` runs are kept in `kept`)."""
    if proc.returncode != 0:
        said = [line for line in proc.stderr.strip().splitlines() if line.strip()][-TAIL:] or ["no output"]
        raise UsageError(f"{target.name} ({where}) exited with {proc.returncode}: {' / '.join(said)}; the "
                         f"{before} run(s) before it are kept in {kept}")
    if not saved:
        raise UsageError(f"{target.name} ({where}) saved no result: measure its loop with gcbench.measure and "
                         f"call m.save() (its folder is {RESULTS_ENV}, set for it)")
    return saved


def _run_once(script: pathlib.Path, side: Side, script_args: list[str],
              timeout: float | None) -> subprocess.CompletedProcess:
    # the side's own modules first (its folder, and src/ where the project keeps them there): an
    # installed copy of the project would otherwise be imported by both sides alike
    own = [str(side.root), *([str(side.root / "src")] if (side.root / "src").is_dir() else [])]
    path = os.pathsep.join([*own, *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, RESULTS_ENV: str(side.results), "PYTHONPATH": path}
    try:
        return subprocess.run([sys.executable, str(script), *script_args], cwd=side.root, env=env, capture_output=True,
                              text=True, errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        raise UsageError(f"{script.name} ({side.name}) ran past {timeout:.0f} s") from None


def split_args(text: str | None) -> list[str]:
    """The script's arguments, given as one string, split as a shell would."""
    try:
        return shlex.split(text or "")
    except ValueError as e:
        raise UsageError(f"{option('script_args')} {text!r}: {e}") from None
