"""`gcbench bisect`: one cell across versions of a package, each in its own environment;
with `--git`, across the commits of its history, to the first bad one."""

from __future__ import annotations

import pathlib

from ..core import records
from ..core.errors import UsageError
from ..flows import pipeline
from ..flows.options import CommitBisectOptions, ReleaseBisectOptions
from ..running import config
from . import _common, _outcome


def register(sub) -> None:
    bi = sub.add_parser("bisect", help="one cell across versions of a package, each in its own environment")
    bi.add_argument("--package", help="the package whose versions are compared, e.g. equinox")
    bi.add_argument("--versions", help="comma-separated versions, oldest first (not with --results)")
    bi.add_argument("--git", metavar="REPO", help="bisect the commits of this repository (a local clone or a URL) "
                                                  "between --good and --bad instead of releases")
    bi.add_argument("--good", metavar="REF", help="with --git: a commit, tag or branch that behaves as before")
    bi.add_argument("--bad", metavar="REF", help="with --git: a later one that shows the change")
    bi.add_argument("--cell", required=True, help="BACKEND/WORKLOAD/POLICY, e.g. equinox-filter/vit/default")
    bi.add_argument("--metric", help="releases: gc_share (default), p99, max/median, median, full_gc; "
                                     "--git: full-collections (default), gc-share, median")
    bi.add_argument("--factor", type=float, default=1.5,
                    help="mark the first version whose metric differs from the previous one's by more than this "
                         "(and a test of the repeats agrees)")
    bi.add_argument("--env", metavar="SPEC", help="base environment the versions are pinned into, "
                                                  "e.g. 'python=3.11 jax==0.6.2' (default: this interpreter)")
    bi.add_argument("--rebuild-envs", action="store_true", help="rebuild the environments instead of reusing them")
    bi.add_argument("--results", help="make the table from this results folder instead of running (read only)")
    defaults = _common.suite_defaults(config.Suite(name="bisect"))
    bi.add_argument("--repeats", type=int, help="fresh processes per version " + defaults["repeats"])
    _common.add_cell_options(bi, defaults)
    bi.add_argument("--out", help="results folder (default: results/bisect-<package>-<date>-<time>)")
    bi.add_argument("--resume", action="store_true", help="keep the ok results already in --out, run the rest")
    bi.add_argument("--force", action="store_true", help="replace the results already in --out")
    bi.add_argument("--no-progress", action="store_true", help="no progress bars")
    bi.add_argument("--report", action="store_true", help="draw the table into reports/<results name>")
    _common.add_json_argument(bi, "the bisect's table")
    _common.add_executor_arguments(bi)
    bi.set_defaults(main=main)


def main(args) -> int:
    from ..analysing import version_bisect
    from ..flows import bisection
    from ..publishing import bisect_text

    if any(x is not None for x in (args.git, args.good, args.bad)):
        return main_git(args)
    if not args.package:
        raise UsageError("--package is needed to bisect releases (or --git REPO --good REF --bad REF for commits)")
    cell = version_bisect.parse_cell(args.cell)
    metric = version_bisect.get_metric(args.metric or "gc_share")
    version_bisect.check_factor(args.factor)  # now, not after the runs
    versions = config.split_list(args.versions, "--versions") if args.versions is not None else None
    if args.results and versions == []:
        raise UsageError("--versions names no version")
    suite = None if args.results else _release_suite(args, cell, versions)
    opts = ReleaseBisectOptions(_common.run_options(args), package=args.package, cell=args.cell, factor=args.factor,
                                results=args.results)
    words = _common.Output(args.json)
    tab, folder, code = bisection.releases(opts, cell, metric, versions, suite, words,
                                           lambda o: _outcome.present(o, words))
    if tab is None:
        return code
    _release_answer(args, tab, folder, bisect_text.release_table(tab))
    return 0


def _release_answer(args, tab, folder, table: str) -> None:
    """The release bisect's table, its report where asked for, and its --json document."""
    out = _common.Output(args.json)
    out()
    out(table)
    paths = pipeline.write_report(folder, None, 3.0, out_fn=out, bisect_table=tab) if args.report else None
    if args.json:
        _common.print_json({"results": str(folder), "bisect": records.to_json(tab),
                            "report": _common.report_json(paths) if paths else None})


def _release_suite(args, cell: tuple[str, str, str], versions: list[str] | None) -> config.Suite:
    """The suite a release bisect runs: `cell` in an environment per version."""
    from ..analysing import version_bisect
    from ..measuring import envspec

    if not versions:
        raise UsageError("--versions is needed to run a bisect (or --results to read one)")
    specs = version_bisect.plan_envs(args.package, versions,
                                     envspec.parse(args.env) if args.env else envspec.EnvSpec(None, ()))
    backend, workload, policy = cell
    suite = config.Suite(name=f"bisect-{envspec.normalize(args.package)}", backends=[backend], workloads=[workload],
                         gc=[policy], envs=[s.text for s in specs])
    _common.apply_overrides(suite, args)
    suite.validate()
    return suite


GIT_METRIC_NAMES = {"gc_share": "gc-share", "full_gc": "full-collections"}  # the release bisect's spellings


def _check_git_flags(args) -> None:
    """A commit bisect's own flags all given, and none of a release bisect's."""
    for name in ("git", "good", "bad"):
        if not getattr(args, name):
            raise UsageError(f"a commit bisect needs --git REPO, --good REF and --bad REF (--{name} is missing)")
    for name in ("versions", "results"):
        if getattr(args, name):
            raise UsageError(f"--{name} is for bisecting releases, not with --git")
    if args.detach:
        raise UsageError("--detach does not go with --git: each step of a commit bisect needs the one before")


def main_git(args) -> int:
    """`bisect --git REPO --good REF --bad REF`: binary search over first-parent commits."""
    from ..analysing import gitbisect, version_bisect
    from ..flows import bisection
    from ..measuring import envspec
    from ..publishing import bisect_text
    from ..running import gitrepo

    _check_git_flags(args)
    gitrepo.check_ref(args.good, "--good")
    gitrepo.check_ref(args.bad, "--bad")
    if args.out:
        bisection.check_folder(pathlib.Path(args.out), args.resume)
    backend, workload, policy = version_bisect.parse_cell(args.cell)
    metric = gitbisect.get_metric(GIT_METRIC_NAMES.get(args.metric, args.metric or "full-collections"))
    base = envspec.parse(args.env) if args.env else envspec.EnvSpec(None, ())
    template = config.Suite(name="bisect-git", backends=[backend], workloads=[workload], gc=[policy])
    _common.apply_overrides(template, args)  # each step's suite: this, in the environment of one commit
    opts = CommitBisectOptions(_common.run_options(args), repo=args.git, good=args.good, bad=args.bad, cell=args.cell,
                               package=args.package)
    tab, culprit, out = bisection.commits(opts, template, base, metric,
                                          lambda o: _outcome.present(o, _common.Output(True)))  # standard error
    words = _common.Output(args.json)
    words()
    words(bisect_text.commit_table(tab, culprit))
    paths = pipeline.write_report(out, None, 3.0, out_fn=words) if args.report else None
    code = 0 if tab.endpoints_differ else 1
    if args.json:
        _common.print_json({"results": str(out), "exit_code": code, "bisect": records.to_json(tab),
                            "culprit": records.to_json(culprit),
                            "report": _common.report_json(paths) if paths else None})
    return code
