"""`gcbench export`: results as a flat table, one row per step or per cell, as CSV (the
default) or JSON (`--json`)."""

from __future__ import annotations

import pathlib
import sys

from ..core import files
from ..core.errors import UsageError
from ..publishing import tabular
from . import _common


def register(sub) -> None:
    p = sub.add_parser("export", help="results as CSV or JSON: one row per step (or per cell, --per cell)")
    p.add_argument("results", help="a results folder, results.tar.gz, or report folder")
    p.add_argument("--csv", action="store_true", help="write CSV (the default)")
    _common.add_json_argument(p, "the rows (`{\"rows\": [...]}`) instead of CSV")
    p.add_argument("--per", choices=tabular.PER, default="step", help="one row per timed step (default) or per cell")
    p.add_argument("--out", help="file to write (default: standard output)")
    p.set_defaults(main=main)


def check_out(out: str, source: str) -> None:
    """Refuse an output that would overwrite the data it is made from: the input itself,
    a file inside the input folder, or an existing results document or archive."""
    target, src = pathlib.Path(out).resolve(), pathlib.Path(source).resolve()
    if target == src or src in target.parents:
        raise UsageError(f"--out {out} is {'the input' if target == src else 'inside the input folder'} "
                         f"{source}: write the table somewhere else")
    if target.exists() and target.name.endswith((".json", ".tar.gz", ".tgz")):
        kind = "JSON document" if target.name.endswith(".json") else "archive"
        raise UsageError(f"--out {out} is an existing {kind}: write the table somewhere else")


def main(args) -> int:
    if args.csv and args.json:
        raise UsageError("--csv and --json exclude each other: pick one format")
    if args.out:
        check_out(args.out, args.results)
    rows = tabular.records(args.results, args.per)
    if args.json:
        if not args.out:
            _common.print_json({"per": args.per, "rows": rows})
            return 0
        text = files.json_bytes({"per": args.per, "rows": _common.jsonable(rows)}, indent=1).decode() + "\n"
    else:
        text = tabular.to_csv(rows)
    if args.out:
        files.write_text(args.out, text)
        print(f"{len(rows)} rows in {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
