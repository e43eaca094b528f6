"""`gcbench compare A B`: per cell, whether B differs from A (repeats as the unit)."""

from __future__ import annotations

import pathlib

from .. import archive, compare
from ..errors import UsageError
from . import _common


def register(sub) -> None:
    p = sub.add_parser("compare", help="per cell: is B faster, slower, the same as A, or is it inconclusive")
    p.add_argument("a", help="results folder (or results.tar.gz, or report folder) A, the baseline")
    p.add_argument("b", help="results folder B")
    p.add_argument("--min-effect", type=float, default=compare.MIN_EFFECT,
                   help="smallest change worth a verdict, as a fraction (default 0.05: 5 %%)")
    p.add_argument("--alpha", type=float, default=compare.ALPHA, help="level of the tests (default 0.05)")
    p.add_argument("--force", action="store_true",
                   help="compare cells whose settings (networks, steps, batch, data, machine) differ")
    p.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    p.set_defaults(main=main)


def main(args) -> int:
    from .. import results

    with archive.opened(pathlib.Path(args.a)) as a, archive.opened(pathlib.Path(args.b)) as b:
        c = compare.compare_docs(results.load_dir(a), results.load_dir(b), args.min_effect, args.alpha, args.force)
    c.update(a=args.a, b=args.b)
    if args.json:
        _common.print_json(compare.to_json(c))
    else:
        print(compare.format_comparison(c))
    if c["refused"] and not args.force:
        raise UsageError(f"{len(c['refused'])} cells refused: their settings differ (listed above; --force compares them)")
    return 0
