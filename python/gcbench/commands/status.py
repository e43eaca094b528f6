"""`gcbench status FOLDER`: what a results folder holds against its plan, and which of its
jobs are still queued or running when it was submitted to a scheduler (`--detach`)."""

from __future__ import annotations

import pathlib

from ..core.errors import UsageError
from . import _common


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
        _common.print_json(st)
    else:
        print(cluster.describe_status(st))
    return 0
