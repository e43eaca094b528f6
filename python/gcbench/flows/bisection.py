"""Bisections, end to end, on top of the pipeline.

`releases`: one cell in an environment per released version of a package (one plan), and
the table of a metric per version. `commits`: the first-parent commits between a good and
a bad one, each built from its files into an environment, one pipeline run per step of a
binary search, until the first bad commit; the search's state (gitbisect.json) is saved
before every step, so that a killed bisect resumes where it stopped. The decisions (tables,
tests, the next candidate) are `analysing.version_bisect` and `analysing.gitbisect`.
"""

from __future__ import annotations

import copy
import pathlib
import sys
from collections.abc import Callable

from ..analysing import gitbisect, version_bisect
from ..core import files, records
from ..core.errors import UsageError, option
from ..measuring import envspec, results
from ..publishing import archive
from ..running import config, gitrepo, runner
from . import pipeline
from .options import CommitBisectOptions, CommitBisectOutcome, FlowOutcome, ReleaseBisectOptions


def releases(opts: ReleaseBisectOptions, cell: tuple[str, str, str], metric, versions: list[str] | None,
             suite: config.Suite | None, out_fn: Callable[..., None],
             present: pipeline.Present | None = None) -> FlowOutcome:
    """A release bisect: `suite` (the cell in one environment per version) run into its
    results folder, or, without a suite, the results already in `opts.results` (read only);
    then the table of `metric` per version, kept beside results it ran as bisect.json.
    The table is None when the run was interrupted."""
    if suite is None:
        if opts.results is None:
            raise ValueError("a release bisect without a suite reads opts.results")
        folder = pathlib.Path(opts.results)
        with archive.opened(folder) as opened:
            docs = results.load_dir(opened)
    else:
        outcome = pipeline.run_suite(suite, opts.run, out_fn, present)
        folder = outcome.folder
        if outcome.docs is None:
            return FlowOutcome(None, folder, outcome.code)
        docs = outcome.docs
    tab = version_bisect.table(docs, opts.package, cell, metric, opts.factor, versions)
    if not tab.rows:
        raise UsageError(f"{opts.results or folder}: no results of {opts.cell} with a known {opts.package} version")
    if suite is not None:  # a bisect that ran keeps its table beside its results; --results only reads
        files.write_json(folder / "bisect.json", records.to_json(tab))
    return FlowOutcome(tab, folder, 0)


def check_folder(out: pathlib.Path, resume: bool) -> None:
    """A commit bisect writes into a new or empty folder, or continues its own (--resume):
    another run's folder would have its results mixed in."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"{option('out')} {out} exists and is not a folder")
    if out.is_dir() and any(p.name != files.LOCK_NAME for p in out.iterdir()):
        if not (out / gitbisect.FILE).is_file():
            raise UsageError(f"{out} holds files that are not a commit bisect's; give {option('out')} a new or empty "
                             "folder")
        if not resume:
            raise UsageError(f"{out} holds a commit bisect already; {option('resume')} continues it, or use another "
                             f"{option('out')}")


def _bisected_package(opts: CommitBisectOptions, repo: pathlib.Path, sha: str, base: envspec.EnvSpec) -> str:
    """The distribution the repository builds, checked against --package and --env."""
    package = gitrepo.package_name(repo, sha)
    if opts.package and envspec.normalize(opts.package) != package:
        raise UsageError(f"{option('package')} {opts.package}, but the repository builds {package}")
    if base.pin_for(package):
        raise UsageError(f"{option('env')} pins {package}, the package whose commits are bisected")
    return package


def _open_plan(opts: CommitBisectOptions, repo: pathlib.Path, package: str, span: tuple, base: envspec.EnvSpec,
               metric) -> tuple[pathlib.Path, gitbisect.CommitPlan]:
    """The bisect's folder and plan: a new one, or (resuming) the one there, refused when it
    bisects other endpoints, another cell or another metric. `span`: (good, bad, between)."""
    good, bad, between = span
    out = pathlib.Path(opts.run.out or config.default_out(f"bisect-{package}-git"))
    if not opts.run.out:  # a given --out was checked before the repository was read
        check_folder(out, opts.run.resume)
    plan = gitbisect.load(out / gitbisect.FILE) if opts.run.resume else None
    if plan is not None and (plan.good.sha, plan.commits[-1].sha, plan.cell, plan.metric) != \
            (good.sha, bad.sha, opts.cell, metric.name):
        raise UsageError(f"{out} holds a bisect of other endpoints, cell or metric; use another {option('out')}")
    return out, plan or gitbisect.CommitPlan(package, str(repo), opts.cell, metric.name, good, list(between), {},
                                             base.text)


def commits(opts: CommitBisectOptions, template: config.Suite, base: envspec.EnvSpec, metric,
            present: pipeline.Present | None = None) -> CommitBisectOutcome:
    """The commit bisect of `opts.repo` from `opts.good` to `opts.bad` on `opts.cell`: every
    step runs `template` (the cell, with the command line's settings) in the environment of
    one commit into the bisect's folder. Returns (table, culprit or None, folder)."""
    repo = gitrepo.local_repo(opts.repo)
    good, bad = gitrepo.commit(repo, opts.good), gitrepo.commit(repo, opts.bad)
    between = gitrepo.commits_between(repo, good, bad)
    package = _bisected_package(opts, repo, good.sha, base)
    out, plan = _open_plan(opts, repo, package, (good, bad, between), base, metric)
    order = [good, *between]
    print(f"gcbench: bisecting {len(between)} commits of {package} ({good.short}..{bad.short}) on {opts.cell}, "
          f"by {metric.title}; at most {gitbisect.max_builds(len(between))} builds",
          file=sys.stderr)

    def words(*parts) -> None:  # a step's words go to standard error, as with --json
        print(*parts, file=sys.stderr, flush=True)

    def measure(index: int, env_text: str) -> list[results.ResultDoc]:
        """Run the cell in one environment into `out` (resuming what is there); its results."""
        sha = order[index].sha
        plan.tested[sha] = env_text
        suite = copy.deepcopy(template)
        suite.name, suite.envs = f"bisect-{package}-git", [env_text]
        suite.validate()
        files.make_folder(out)
        gitbisect.save(out, plan)  # first: a folder holding results of this bisect always says so
        # every step resumes the folder: what this bisect measured before is not measured again
        step = opts.run.replace(out=str(out), resume=True, force=False)
        print(f"gcbench: {order[index].short} {order[index].subject[:70]}", file=sys.stderr)
        outcome = pipeline.run_suite(suite, step, words, present)
        gitbisect.save(out, plan)
        if outcome.docs is None:  # interrupted: by SIGTERM (143) or Ctrl-C (130), as the step was
            raise runner.Interrupted(outcome.code - 128 if outcome.code > 128 else 2)
        return [d for d in outcome.docs if results.part(d, "environment").get("spec") == env_text]

    def env_for(index: int, pins: tuple[str, ...]) -> str:
        """The environment of commit `index`: the package from its files, beside `pins`."""
        source = gitrepo.source_pin(package, repo, order[index].sha)
        return envspec.EnvSpec(base.python, tuple(sorted((*pins, source), key=envspec.requirement_name))).text

    # the good endpoint with the base pins only; every other commit gets the versions it resolved
    good_ok = results.ok(measure(0, env_for(0, base.pins)))
    pinned = tuple(sorted({*gitbisect.pinned_like(results.part(good_ok[0], "environment"), package), *base.pins},
                          key=envspec.requirement_name)) if good_ok else base.pins

    measure(len(order) - 1, env_for(len(order) - 1, pinned))
    while True:
        docs = results.load_dir(out)
        tab = gitbisect.table(plan, gitbisect.docs_by_env(docs))
        if not tab.endpoints_differ or tab.first_bad or tab.range is None:
            break
        shas = [c.sha for c in order]
        lo, hi = (shas.index(sha) for sha in tab.range)
        candidate = gitbisect.next_candidate(len(order), lo, hi, {shas.index(sha) for sha in plan.tested})
        if candidate is None:
            break
        measure(candidate, env_for(candidate, pinned))
    culprit = None
    if tab.first_bad:
        message, changed = gitrepo.message_and_files(repo, tab.first_bad)
        culprit = plan.culprit = gitbisect.Culprit(message, changed)
        gitbisect.save(out, plan)
    return CommitBisectOutcome(tab, culprit, out)
