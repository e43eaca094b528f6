"""`gcbench compare A B`: per cell, whether B differs from A (repeats as the unit)."""

from __future__ import annotations

import pathlib
import sys

from ..analysing import comparison
from ..core import records
from ..core.errors import UsageError
from ..publishing import archive, comparison_text
from . import _common


def register(sub) -> None:
    p = sub.add_parser("compare", help="per cell: is B faster, slower, the same as A, or is it inconclusive")
    p.add_argument("a", help="results folder (or results.tar.gz, or report folder) A, the baseline")
    p.add_argument("b", nargs="?", help="results folder B (left out with --base and --head: both sides are in A)")
    p.add_argument("--base", metavar="ENV", help="with one folder: the environment (or variant) of the baseline side")
    p.add_argument("--head", metavar="ENV", help="with one folder: the environment (or variant) compared with it; "
                                                 "an interleaved A/B, both measured in one run, is paired by round "
                                                 "and needs no allowance for two runs apart")
    p.add_argument("--min-effect", type=float, default=comparison.MIN_EFFECT,
                   help="smallest change worth a verdict, as a fraction (default 0.05: 5 %%)")
    p.add_argument("--alpha", type=float, default=comparison.ALPHA, help="level of the tests (default 0.05)")
    p.add_argument("--force", action="store_true",
                   help="compare cells whose settings (networks, steps, batch, data, machine) differ")
    p.add_argument("--fail-on", type=_fail_on, default=(), metavar="VERDICT[,VERDICT]",
                   help="exit 1 when any cell gets one of these verdicts: " + ", ".join(FAIL_ON) +
                        " (for a CI job: asv's `continuous` does the same)")
    _common.add_json_argument(p, "the verdicts")
    p.set_defaults(main=main)


# --fail-on names -> (the metric of a test, the verdict that fails)
FAIL_ON = {"slower": ("median", "slower"), "slower-run": ("mean", "slower run"), "more-gc": ("gc_share", "more GC"),
           "more-full-gc": ("full_rate", "more full GCs"), "more-collections": ("collections", "more collections"),
           "more-memory": ("peak_rss", "more memory"), "more-allocations": ("pressure", "more allocations"),
           "more-promotions": ("promotions", "more promotions"), "more-retained": ("retained", "more retained"),
           "more-memory-kept": ("bytes_kept", "more memory kept"), "more-gc-work": ("gc_work", "more GC work")}


def _fail_on(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in FAIL_ON]
    if unknown or not names:
        from ..core.errors import did_you_mean

        hint = did_you_mean(unknown[0], FAIL_ON) if unknown else ""
        raise UsageError(f"--fail-on takes {', '.join(FAIL_ON)} (comma-separated), got {text!r}{hint}")
    return names


# The gate docs/usage.md documents for CI (the gc-gate action's default): the counts a
# starting heap does not move
GATE = ("more-full-gc", "more-collections", "more-allocations", "more-retained", "more-memory-kept", "more-gc-work")


def failing(c: comparison.Comparison, fail_on: tuple[str, ...]) -> list[tuple[comparison.PairRow, comparison.Test]]:
    """(row, test) for every test whose verdict `fail_on` names, except a cost the same
    pair's gain pays for (`comparison.mark_trades`: a trade, said, not a failure)."""
    wanted = {FAIL_ON[n] for n in fail_on}
    return [(r, t) for r in c.rows for t in r.tests if (t.metric, t.verdict) in wanted and not t.traded]


def failures(c: comparison.Comparison, fail_on: tuple[str, ...]) -> list[str]:
    """`cell verdict` for every test `failing` names."""
    return [f"{r.cell} {t.verdict}" for r, t in failing(c, fail_on)]


def not_judged(c: comparison.Comparison, fail_on: tuple[str, ...]) -> list[str]:
    """Why, for every test `fail_on` asks about that the machine kept from being judged."""
    metrics = {FAIL_ON[n][0] for n in fail_on}
    return [t.not_judged for r in c.rows for t in r.tests if t.metric in metrics and t.not_judged]


def _not_itself(a: str, b: str) -> None:
    """Two results folders that are one (`X X`, `X ./X/`, a link to X): a usage error, since
    a run compared with itself passes every gate."""
    try:
        same = pathlib.Path(a).samefile(b)
    except OSError:
        return  # missing or unreadable: loading says why
    if same:
        raise UsageError(f"{a} and {b} are the same folder: a run compared with itself says nothing and passes every "
                         "gate; compare the baseline's results with the new ones")


def _one_folder(args) -> comparison.Comparison:
    """`compare FOLDER --base ENV --head ENV`: the two sides of one interleaved run."""
    from ..measuring import results

    if not (args.base and args.head):
        raise UsageError(f"compare needs two results folders (`gcbench compare {args.a} B`), or one folder with "
                         "--base ENV --head ENV: the two environments of one interleaved run to compare")
    if args.base == args.head:
        raise UsageError(f"--base and --head are both {args.base!r}: a side compared with itself says nothing; "
                         "name the two environments (or variants) to compare")
    with archive.opened(pathlib.Path(args.a)) as a:
        docs_a, docs_b = comparison.split_sides(results.load_dir(a), args.base, args.head)
    c = comparison.compare_docs(docs_a, docs_b, args.min_effect, args.alpha, args.force)
    c.a, c.b = f"{args.a} [{args.base}]", f"{args.a} [{args.head}]"
    c.notes = [n.replace("is in both folders: cells paired across", "is on both sides: cells paired across")
               for n in c.notes]
    return c


def _two_folders(args) -> comparison.Comparison:
    """`compare A B`: two results folders (or reports' archives)."""
    from ..measuring import results

    if args.base or args.head:
        raise UsageError("--base and --head pick the two sides inside one folder: give one folder with them, not two")
    _not_itself(args.a, args.b)
    with archive.opened(pathlib.Path(args.a)) as a, archive.opened(pathlib.Path(args.b)) as b:
        c = comparison.compare_docs(results.load_dir(a), results.load_dir(b), args.min_effect, args.alpha,
                                    args.force)
    c.a, c.b = args.a, args.b
    return c


def _say_unjudged(unjudged: list[str], fail_on: list[str]) -> None:
    """Timed tests a loaded or other machine kept from being judged, which cannot fail."""
    if unjudged:
        print(f"gcbench: --fail-on {','.join(fail_on)}: {len(unjudged)} timed test{'s' * (len(unjudged) > 1)} not "
              f"judged ({unjudged[0]}), so they cannot fail; the counts still gate", file=sys.stderr)


def main(args) -> int:
    c = _one_folder(args) if args.b is None else _two_folders(args)
    if args.json:
        _common.print_json(records.to_json(c))
    else:
        print(comparison_text.format_comparison(c))
    if c.refused and not args.force:
        raise UsageError(
            f"{len(c.refused)} cells refused: their settings differ (listed above; --force compares them)"
        )
    if not c.rows:
        raise UsageError(f"{c.a} and {c.b} share no cell that ran in both: nothing was compared")
    failed = failures(c, args.fail_on)
    _say_unjudged(not_judged(c, args.fail_on), args.fail_on)
    if failed:
        print(f"gcbench: --fail-on {','.join(args.fail_on)}: {len(failed)} verdict{'s' * (len(failed) > 1)}: "
              + "; ".join(failed[:10])
              + (f" and {len(failed) - 10} more" if len(failed) > 10 else ""), file=sys.stderr)
        return 1
    return 0
