"""`gcbench bisect`: one cell across versions of a package, each in its own environment."""

from __future__ import annotations

import pathlib

from .. import archive, config, files, results
from ..errors import UsageError
from . import _common


def register(sub) -> None:
    bi = sub.add_parser("bisect", help="one cell across versions of a package, each in its own environment")
    bi.add_argument("--package", required=True, help="the package whose versions are compared, e.g. equinox")
    bi.add_argument("--versions", help="comma-separated versions, oldest first (not with --results)")
    bi.add_argument("--cell", required=True, help="BACKEND/WORKLOAD/POLICY, e.g. equinox-filter/vit/default")
    bi.add_argument("--metric", default="gc_share", help="gc_share (default), p99, max/median, median, full_gc")
    bi.add_argument("--factor", type=float, default=1.5,
                    help="mark the first version whose metric differs from the previous one's by more than this "
                         "(and a test of the repeats agrees)")
    bi.add_argument("--env", metavar="SPEC", help="base environment the versions are pinned into, "
                                                  "e.g. 'python=3.11 jax==0.6.2' (default: this interpreter)")
    bi.add_argument("--rebuild-envs", action="store_true", help="rebuild the environments instead of reusing them")
    bi.add_argument("--results", help="make the table from this results folder instead of running (read only)")
    bi.add_argument("--repeats", type=int, help="fresh processes per version (default 3)")
    _common.add_cell_options(bi)
    bi.add_argument("--out", help="results folder (default: results/bisect-<package>-<date>-<time>)")
    bi.add_argument("--resume", action="store_true", help="keep the ok results already in --out, run the rest")
    bi.add_argument("--force", action="store_true", help="replace the results already in --out")
    bi.add_argument("--no-progress", action="store_true", help="no progress bars")
    bi.add_argument("--report", action="store_true", help="draw the table into reports/<results name>")
    bi.set_defaults(main=main)


def main(args) -> int:
    from .. import bisect, envs

    cell = bisect.parse_cell(args.cell)
    metric = bisect.get_metric(args.metric)
    bisect.check_factor(args.factor)  # now, not after the runs
    versions = config.split_list(args.versions, "--versions") if args.versions is not None else None
    if args.results:
        if args.versions is not None and not versions:
            raise UsageError("--versions names no version")
        source = pathlib.Path(args.results)
        with archive.opened(source) as folder:
            docs = results.load_dir(folder)
        out_dir = None
    else:
        if not versions:
            raise UsageError("--versions is needed to run a bisect (or --results to read one)")
        specs = bisect.plan_envs(args.package, versions, envs.parse(args.env) if args.env else envs.EnvSpec(None, ()))
        backend, workload, policy = cell
        suite = config.Suite(name=f"bisect-{envs.normalize(args.package)}", backends=[backend], workloads=[workload],
                             gc=[policy], envs=[s.text for s in specs])
        _common.apply_overrides(suite, args)
        suite.validate()
        docs, out_dir, code = _common.run_suite(suite, args, args.out or config.default_out(suite.name),
                                                _common.Output())
        if docs is None:
            return code
    tab = bisect.table(docs, args.package, cell, metric, args.factor, versions)
    if not tab["rows"]:
        raise UsageError(f"{args.results or out_dir}: no results of {args.cell} with a known {args.package} version")
    if out_dir is not None:  # a bisect that ran keeps its table beside its results; --results only reads
        files.write_json(out_dir / "bisect.json", tab)
    print()
    print(bisect.format_table(tab))
    if args.report:
        _common.write_report(out_dir or source, None, 3.0, bisect_table=tab)
    return 0
