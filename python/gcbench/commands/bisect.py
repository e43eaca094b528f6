"""`gcbench bisect`: one cell across versions of a package, each in its own environment;
with `--git`, across the commits of its history, to the first bad one."""

from __future__ import annotations

import argparse
import pathlib
import sys

from .. import archive, cluster_options, config, files, results
from ..errors import UsageError
from . import _common


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
    bi.add_argument("--repeats", type=int, help="fresh processes per version (default 3)")
    _common.add_cell_options(bi)
    bi.add_argument("--out", help="results folder (default: results/bisect-<package>-<date>-<time>)")
    bi.add_argument("--resume", action="store_true", help="keep the ok results already in --out, run the rest")
    bi.add_argument("--force", action="store_true", help="replace the results already in --out")
    bi.add_argument("--no-progress", action="store_true", help="no progress bars")
    bi.add_argument("--report", action="store_true", help="draw the table into reports/<results name>")
    _common.add_json_argument(bi, "the bisect's table")
    cluster_options.add_arguments(bi)
    bi.set_defaults(main=main)


def main(args) -> int:
    from .. import bisect, envs

    if args.git is not None or args.good is not None or args.bad is not None:
        return main_git(args)
    if not args.package:
        raise UsageError("--package is needed to bisect releases (or --git REPO --good REF --bad REF for commits)")
    cell = bisect.parse_cell(args.cell)
    metric = bisect.get_metric(args.metric or "gc_share")
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
                                                _common.Output(args.json))
        if docs is None:
            return code
    tab = bisect.table(docs, args.package, cell, metric, args.factor, versions)
    if not tab["rows"]:
        raise UsageError(f"{args.results or out_dir}: no results of {args.cell} with a known {args.package} version")
    if out_dir is not None:  # a bisect that ran keeps its table beside its results; --results only reads
        files.write_json(out_dir / "bisect.json", tab)
    out = _common.Output(args.json)
    out()
    out(bisect.format_table(tab))
    paths = _common.write_report(out_dir or source, None, 3.0, out_fn=out, bisect_table=tab) if args.report else None
    if args.json:
        _common.print_json({"results": str(out_dir or source), "bisect": tab,
                            "report": _common.report_json(paths) if paths else None})
    return 0


GIT_METRIC_NAMES = {"gc_share": "gc-share", "full_gc": "full-collections"}  # the release bisect's spellings


def _check_bisect_folder(out: pathlib.Path, resume: bool) -> None:
    """A commit bisect writes into a new or empty folder, or continues its own (--resume):
    another run's folder would have its results mixed in."""
    from .. import gitbisect

    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a folder")
    if out.is_dir() and any(p.name != files.LOCK_NAME for p in out.iterdir()):
        if not (out / gitbisect.FILE).is_file():
            raise UsageError(f"{out} holds files that are not a commit bisect's; give --out a new or empty folder")
        if not resume:
            raise UsageError(f"{out} holds a commit bisect already; --resume continues it, or use another --out")


def main_git(args) -> int:
    """`bisect --git REPO --good REF --bad REF`: binary search over first-parent commits."""
    from .. import bisect, envs, gitbisect

    for name in ("git", "good", "bad"):
        if not getattr(args, name):
            raise UsageError(f"a commit bisect needs --git REPO, --good REF and --bad REF (--{name} is missing)")
    for name in ("versions", "results"):
        if getattr(args, name):
            raise UsageError(f"--{name} is for bisecting releases, not with --git")
    if args.detach:
        raise UsageError("--detach does not go with --git: each step of a commit bisect needs the one before")
    gitbisect.check_ref(args.good, "--good")
    gitbisect.check_ref(args.bad, "--bad")
    if args.out:
        _check_bisect_folder(pathlib.Path(args.out), args.resume)
    backend, workload, policy = bisect.parse_cell(args.cell)
    metric = gitbisect.get_metric(GIT_METRIC_NAMES.get(args.metric, args.metric or "full-collections"))
    base = envs.parse(args.env) if args.env else envs.EnvSpec(None, ())
    repo = gitbisect.local_repo(args.git)
    good, bad = gitbisect.commit(repo, args.good), gitbisect.commit(repo, args.bad)
    commits = gitbisect.commits_between(repo, good, bad)
    package = gitbisect.package_name(repo, good.sha)
    if args.package and envs.normalize(args.package) != package:
        raise UsageError(f"--package {args.package}, but the repository builds {package}")
    if base.pin_for(package):
        raise UsageError(f"--env pins {package}, the package whose commits are bisected")
    out = pathlib.Path(args.out or config.default_out(f"bisect-{package}-git"))
    if not args.out:  # a given --out was checked before the repository was read
        _check_bisect_folder(out, args.resume)
    plan = gitbisect.load(out / gitbisect.FILE) if args.resume else None
    if plan is not None and (plan["good"]["sha"], plan["commits"][-1]["sha"], plan["cell"], plan["metric"]) != \
            (good.sha, bad.sha, args.cell, metric.name):
        raise UsageError(f"{out} holds a bisect of other endpoints, cell or metric; use another --out")
    plan = plan or {"format": gitbisect.FORMAT, "schema_version": gitbisect.SCHEMA_VERSION, "package": package,
                    "repo": str(repo), "cell": args.cell, "metric": metric.name, "good": good.to_json(),
                    "commits": [c.to_json() for c in commits], "tested": {}, "base": base.text}
    order = [good] + commits
    print(f"gcbench: bisecting {len(commits)} commits of {package} ({good.short}..{bad.short}) on {args.cell}, "
          f"by {metric.title}; at most {gitbisect.max_builds(len(commits))} builds",
          file=sys.stderr)

    def measure(index: int, env_text: str) -> list[dict]:
        """Run the cell in one environment into `out` (resuming what is there); its results."""
        sha = order[index].sha
        plan["tested"][sha] = env_text
        suite = config.Suite(name=f"bisect-{package}-git", backends=[backend], workloads=[workload], gc=[policy],
                             envs=[env_text])
        _common.apply_overrides(suite, args)
        suite.validate()
        files.make_folder(out)
        gitbisect.save(out, plan)  # first: a folder holding results of this bisect always says so
        # every step resumes the folder: what this bisect measured before is not measured again
        run_args = argparse.Namespace(**{**vars(args), "resume": True, "force": False})
        print(f"gcbench: {order[index].short} {order[index].subject[:70]}", file=sys.stderr)
        docs, _, _ = _common.run_suite(suite, run_args, str(out), _common.Output(as_json=True))
        gitbisect.save(out, plan)
        if docs is None:
            raise KeyboardInterrupt
        return [d for d in docs if (d.get("environment") or {}).get("spec") == env_text]

    def env_for(index: int, pins: tuple[str, ...]) -> str:
        """The environment of commit `index`: the package from its files, beside `pins`."""
        source = gitbisect.source_pin(package, repo, order[index].sha)
        return envs.EnvSpec(base.python, tuple(sorted((*pins, source), key=envs.requirement_name))).text

    # the good endpoint with the base pins only; every other commit gets the versions it resolved
    good_ok = [d for d in measure(0, env_for(0, base.pins)) if d["status"] == "ok"]
    pinned = tuple(sorted({*gitbisect.pinned_like(good_ok[0].get("environment") or {}, package), *base.pins},
                          key=envs.requirement_name)) if good_ok else base.pins

    measure(len(order) - 1, env_for(len(order) - 1, pinned))
    while True:
        docs = results.load_dir(out)
        tab = gitbisect.table(plan, gitbisect.docs_by_env(docs))
        if not tab.get("endpoints_differ") or tab["first_bad"]:
            break
        shas = [c.sha for c in order]
        lo, hi = (shas.index(sha) for sha in tab["range"])
        candidate = gitbisect.next_candidate(len(order), lo, hi, {shas.index(sha) for sha in plan["tested"]})
        if candidate is None:
            break
        measure(candidate, env_for(candidate, pinned))
    culprit = None
    if tab["first_bad"]:
        message, changed = gitbisect.message_and_files(repo, tab["first_bad"])
        culprit = {"message": message, "files": changed}
        plan["culprit"] = culprit
        gitbisect.save(out, plan)
    words = _common.Output(args.json)
    words()
    words(gitbisect.format_table(tab, culprit))
    paths = _common.write_report(out, None, 3.0, out_fn=words) if args.report else None
    code = 0 if tab.get("endpoints_differ") else 1
    if args.json:
        _common.print_json({"results": str(out), "exit_code": code, "bisect": tab, "culprit": culprit,
                            "report": _common.report_json(paths) if paths else None})
    return code

