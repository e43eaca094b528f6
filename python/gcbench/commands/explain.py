"""`gcbench explain CELL`: where the collector's work comes from, in a diagnostic run."""

from __future__ import annotations

import pathlib
import sys
import tempfile

from .. import config, explain, files, results
from ..errors import UsageError
from . import _common


def register(sub) -> None:
    p = sub.add_parser("explain", help="where the collector's work comes from: promotions, scans, cycles")
    p.add_argument("cell", help="BACKEND/WORKLOAD/POLICY, e.g. equinox-filter/vit/default")
    _common.add_cell_options(p)
    p.add_argument("--no-sites", action="store_true",
                   help="do not trace allocation sites (tracemalloc); faster, but the sites are missing")
    p.add_argument("--site-steps", type=int, default=explain.SITE_STEPS,
                   help=f"trace allocation sites over the last this many steps (default {explain.SITE_STEPS}: "
                        "tracemalloc slows allocation-heavy steps tens of times)")
    p.add_argument("--sample-rate", type=float, default=explain.JULIA_SAMPLE_RATE,
                   help="Julia backends: share of allocations Profile.Allocs samples (default 0.01)")
    p.add_argument("--env", metavar="SPEC", help="run it in a virtual environment, e.g. 'python=3.11 equinox==0.13.2'")
    p.add_argument("--rebuild-envs", action="store_true", help="rebuild the environment instead of reusing it")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--out", help="results folder for explain.json (default: results/explain-<date>-<time>); "
                                 "cells already there give the recommendations their measured effects")
    _common.add_json_argument(p, "the explanation")
    p.set_defaults(main=main)


def main(args) -> int:
    from .. import bisect, runner

    if args.cell.split("/")[0] == "user":
        raise UsageError(f"{args.cell} is your own loop, which gcbench cannot run: run your script once more with "
                         "GCBENCH_EXPLAIN=1 in the environment (or gcbench.measure(..., explain=True)) and save into "
                         "the same folder; `gcbench report FOLDER` then shows why")
    backend, workload, policy = bisect.parse_cell(args.cell)
    suite = config.Suite(name="explain", backends=[backend], workloads=[workload], gc=[policy], repeats=1,
                         steps=explain.DEFAULT_STEPS, envs=[args.env] if args.env else [])
    _common.apply_overrides(suite, args)
    suite.validate()
    if not 0 <= args.sample_rate <= 1:
        raise UsageError(f"--sample-rate must be from 0 to 1, got {args.sample_rate:g}")
    if args.site_steps < 1:
        raise UsageError(f"--site-steps must be a positive integer, got {args.site_steps}")
    _common.check_data(args.data)
    cell = suite.cells(args.data)[0]
    reason = runner.unsupported_reason(cell)
    if reason:
        raise UsageError(reason)
    out_dir = files.make_folder(args.out or config.default_out("explain"), "results folder")
    # explain.json is read, merged and written: one gcbench at a time in a folder, and never
    # beside a run that is writing into it
    with files.FolderLock(out_dir, f"{out_dir} is in use by another gcbench (a run or an explain); wait for it "
                                   "or use another --out"):
        return _explain(args, suite, cell, out_dir, backend)


def _explain(args, suite, cell, out_dir, backend) -> int:
    from .. import envs, runner

    env_args = {}
    if cell.env is not None:
        needed = sorted(set(runner.get_backend(backend).requires))
        built = envs.build_all([envs.parse(cell.env)], needed, args.rebuild_envs, log=lambda m: print(m, file=sys.stderr))
        env = built[cell.env]
        if isinstance(env, Exception):
            raise UsageError(f"environment {cell.env_spec.name}: {env}")
        env_args = {"python": env.python, "environment": env.describe()}
    print(f"gcbench: diagnostic run of {cell.label}, {cell.steps} steps after {cell.warmup} warm-up; "
          f"{explain.DISTURBED}", file=sys.stderr, flush=True)
    options = {"sites": not args.no_sites, "sample_rate": args.sample_rate, "site_steps": args.site_steps}
    bars = runner.Progress([cell], sys.stderr) if not args.no_progress and sys.stderr.isatty() else None
    with tempfile.TemporaryDirectory(prefix="gcbench-explain-") as tmp:
        try:
            with runner.interruptible():
                if bars is not None:
                    bars.start(cell, f"diagnostic run of {cell.label}")
                raw = runner.run_worker(cell, pathlib.Path(tmp) / "raw.json", ["gcbench"] + args.argv,
                                        suite.timeout, bars, explain=options, load=explain.load_raw, **env_args)
        except runner.CellFailed as e:
            raise UsageError(f"the diagnostic run failed: {str(e).splitlines()[0]}") from None
        except runner.Interrupted as e:
            print("\ngcbench: interrupted", file=sys.stderr)
            return e.exit_code
        finally:
            if bars is not None:
                bars.finish(cell)
                bars.close()
    docs = results.load_dir(out_dir, allow_empty=True)
    expl = explain.summarize(raw, docs)
    explain.save(out_dir, expl)
    if args.json:
        _common.print_json(expl)
    else:
        print(explain.format_text(expl))
        print(f"\nexplanation in {out_dir / explain.FILE}")
    return 0
