"""`gcbench explain CELL`: where the collector's work comes from, in a diagnostic run."""

from __future__ import annotations

from ..analysing import explanation_records, gc_causes
from ..core.errors import UsageError
from ..flows import pipeline
from ..flows.options import ExplainOptions
from ..measuring import diagnostic_run
from ..publishing import explanation_text
from ..running import config
from . import _common


def register(sub) -> None:
    p = sub.add_parser("explain", help="where the collector's work comes from: promotions, scans, cycles")
    p.add_argument("cell", help="BACKEND/WORKLOAD/POLICY, e.g. equinox-filter/vit/default")
    _common.add_cell_options(p, _common.suite_defaults(_suite()))
    p.add_argument("--no-sites", action="store_true",
                   help="do not trace allocation sites (tracemalloc); faster, but the sites are missing")
    p.add_argument("--site-steps", type=int, default=diagnostic_run.SITE_STEPS,
                   help=f"trace allocation sites over the last this many steps (default {diagnostic_run.SITE_STEPS}: "
                        "tracemalloc slows allocation-heavy steps tens of times)")
    p.add_argument("--sample-rate", type=float, default=diagnostic_run.JULIA_SAMPLE_RATE,
                   help="Julia backends: share of allocations Profile.Allocs samples (default 0.01)")
    p.add_argument("--env", metavar="SPEC", help="run it in a virtual environment, e.g. 'python=3.11 equinox==0.13.2'")
    p.add_argument("--rebuild-envs", action="store_true", help="rebuild the environment instead of reusing it")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--out", help="results folder for explain.json (default: results/explain-<date>-<time>); "
                                 "cells already there give the recommendations their measured effects")
    _common.add_json_argument(p, "the explanation")
    p.set_defaults(main=main)


def _suite(**cells) -> config.Suite:
    """The one-cell suite explain runs (one repeat, diagnostic_run.DEFAULT_STEPS steps)."""
    return config.Suite(name="explain", repeats=1, steps=diagnostic_run.DEFAULT_STEPS, **cells)


def main(args) -> int:
    from ..analysing import version_bisect
    from ..flows import explanation
    from ..running import runner

    if args.cell.split("/")[0] == "user":
        raise UsageError(f"{args.cell} is your own loop, which gcbench cannot run: run your script once more with "
                         "GCBENCH_EXPLAIN=1 in the environment (or gcbench.measure(..., explain=True)) and save into "
                         "the same folder; `gcbench report FOLDER` then shows why")
    backend, workload, policy = version_bisect.parse_cell(args.cell)
    suite = _suite(backends=[backend], workloads=[workload], gc=[policy], envs=[args.env] if args.env else [])
    _common.apply_overrides(suite, args)
    suite.validate()
    if not 0 <= args.sample_rate <= 1:
        raise UsageError(f"--sample-rate must be from 0 to 1, got {args.sample_rate:g}")
    if args.site_steps < 1:
        raise UsageError(f"--site-steps must be a positive integer, got {args.site_steps}")
    pipeline.check_data(args.data)
    cell = suite.cells(args.data)[0]
    reason = runner.unsupported_reason(cell)
    if reason:
        raise UsageError(reason)
    opts = ExplainOptions(_common.run_options(args), sites=not args.no_sites, site_steps=args.site_steps,
                          sample_rate=args.sample_rate)
    expl, out_dir, code = explanation.run(opts, suite, cell)
    if expl is None:
        return code
    if args.json:
        _common.print_json(explanation_records.to_json(expl))
    else:
        print(explanation_text.format_text(expl))
        print(f"\nexplanation in {out_dir / gc_causes.FILE}")
    return 0
