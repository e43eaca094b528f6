"""`gcbench status FOLDER`: what a results folder holds against its plan, and which of its
jobs are still queued or running when it was submitted to a scheduler (`--detach`)."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

from ..core import records
from ..core.errors import UsageError, printable
from ..core.terminal import counted
from . import _common

if TYPE_CHECKING:
    from ..running.cluster import FolderStatus


def register(sub) -> None:
    p = sub.add_parser("status", help="what a results folder holds against its plan (and its SLURM jobs)")
    p.add_argument("folder", help="a results folder (of gcbench run, reproduce or bisect)")
    _common.add_json_argument(p, "the counts")
    p.set_defaults(main=main)


def main(args) -> int:
    from ..running import cluster

    folder = pathlib.Path(args.folder)
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such results folder")
    if not (folder / "suite.json").is_file():
        raise UsageError(f"{folder}: no suite.json, so no plan to measure against (is it a results folder?)")
    st = cluster.status(folder)
    if args.json:
        _common.print_json(records.to_json(st))
    else:
        print(describe(st))
    return 0


def describe(st: FolderStatus) -> str:
    """The folder's status in words: its counts, then its submission's jobs."""
    r = st.results
    lines = [
        f"{printable(st.folder)}: {counted(st.planned, 'run')} planned (plan {st.state or 'without a state'}): "
        f"{r.ok} ok, {r.failed} failed, {r.unavailable} unavailable, {r.missing} without a result"
    ]
    sub = st.submission
    if sub:
        line = (f"submitted {sub.submitted} through {sub.executor}: {counted(sub.jobs, 'job')}; "
                f"{counted(sub.measured_by_it, 'run')} measured by them so far")
        alive = sub.queued_or_running
        if alive is None:
            line += "; squeue could not say which jobs are alive"
        else:
            line += f"; {counted(alive, 'job')} {'queued or running' if sub.executor == 'slurm' else 'running'}"
        lines.append(line + f"; job logs in {printable(sub.log_folder)}")
        if r.missing and alive == 0:
            lines.append("no job is left to measure the runs without a result: rerun with --resume")
    return "\n".join(lines)
