"""`gcbench report`: statistics, plots and a publishable report of a results folder."""

from __future__ import annotations

import pathlib

from ..flows import pipeline
from . import _common


def register(sub) -> None:
    p = sub.add_parser("report", help="statistics, plots and a publishable report of a results folder")
    p.add_argument("results", help="a results folder written by `gcbench run`, a results.tar.gz, or a report "
                                   "folder holding one (rebuilt from its own data)")
    p.add_argument("--out", help="report folder (default: reports/<results folder name>; a report folder: itself)")
    p.add_argument("--spike-factor", type=float, default=3.0, help="a spike is a step slower than this x median")
    p.add_argument("--title",
                   help="the report's title (default: the question it answers, and the results folder's name)")
    _common.add_json_argument(p, "the files written")
    p.set_defaults(main=main)


def main(args) -> int:
    paths = pipeline.write_report(pathlib.Path(args.results), args.out, args.spike_factor,
                                 out_fn=_common.Output(args.json), title=args.title)
    if args.json:
        _common.print_json({"report": _common.report_json(paths)})
    return 0
