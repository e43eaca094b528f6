"""`gcbench run`: a suite, one fresh worker process per repeat of each cell."""

from __future__ import annotations

import shlex

from ..core.errors import UsageError
from ..flows import pipeline
from ..measuring import results
from ..running import config
from . import _common, _outcome


def register(sub) -> None:
    r = sub.add_parser("run", help="run a suite: one worker process per repeat of each cell")
    what = r.add_argument_group("what to run")
    what.add_argument("--suite", default="default",
                      help="a shipped suite (default, quick: `gcbench list` describes them) or a TOML file "
                           "(default: default)")
    what.add_argument("--quick", action="store_true", help="the small 'quick' suite (same as --suite quick)")
    what.add_argument("--backends", help="comma-separated backends, or 'all' (default: the suite's)")
    what.add_argument("--workloads", help="comma-separated workloads (default: the suite's)")
    what.add_argument("--gc",
                      help="comma-separated GC policies: default, freeze, disable, manual:K (default: the suite's)")
    defaults = _common.shipped_suite_defaults()
    what.add_argument("--repeats", type=int,
                      help="fresh processes per cell (the unit of inference) " + defaults["repeats"])
    _common.add_cell_options(what, defaults)
    what.add_argument("--alloc-blocks", action="store_true",
                      help="also count allocated memory blocks per step (walks the heap: slows Python steps)")
    mine = r.add_argument_group("your own script (one that measures with gcbench.measure and calls m.save())")
    mine.add_argument("--script", metavar="PATH",
                      help="run this script --repeats times in fresh processes, its results gathered as repeats of "
                           "one cell (m.save() with no folder writes into --out)")
    mine.add_argument("--script-args", metavar="ARGS", help="the script's arguments, as one string")
    mine.add_argument("--base", metavar="REF|DIR",
                      help="with --head: run the script of two versions (git refs, or folders) against each other, "
                           "interleaved in one run, into OUT/base and OUT/head")
    mine.add_argument("--head", metavar="REF|DIR", help="the version to judge against --base")
    out = r.add_argument_group("where the results go")
    out.add_argument("--out", help="results folder (default: results/<suite>-<date>-<time>)")
    out.add_argument("--resume", action="store_true",
                     help="the folder holds results already: keep those with the same settings, run the rest")
    out.add_argument("--force", action="store_true",
                     help="the folder holds results already: replace them (each once its new result is ready)")
    out.add_argument("--no-progress", action="store_true", help="no progress bars")
    out.add_argument("--report", action="store_true",
                     help="write the report at the end (into reports/<results name>)")
    _common.add_json_argument(out, "the per-cell summary (`cells`: docs/results.md, \"Result fields\")")
    _common.add_env_arguments(r.add_argument_group("environments"))
    _common.add_executor_arguments(r.add_argument_group("where repeats run"))
    r.set_defaults(main=main)


def suite_from_args(args) -> config.Suite:
    suite = config.load_suite("quick" if args.quick else args.suite)
    if any(x is not None for x in (args.backends, args.workloads, args.gc)):
        suite.also = []  # the command line's cells replace the suite's, its [[also]] tables too
    if args.backends is not None:
        suite.backends = config.split_list(args.backends, "--backends")
    if args.workloads is not None:
        suite.workloads = config.split_list(args.workloads, "--workloads")
    if args.gc is not None:
        suite.gc = config.split_list(args.gc, "--gc")
    _common.apply_overrides(suite, args)
    if args.env:
        suite.envs = list(args.env)
    return suite.validate()


def main(args) -> int:
    if args.resume and args.force:
        raise UsageError("--resume and --force exclude each other: keep what is there, or replace it")
    if args.script:
        return _script_main(args)
    if any((args.base, args.head, args.script_args)):
        raise UsageError("--base, --head and --script-args go with --script: the script of yours to run")
    suite = suite_from_args(args)
    out = _common.Output(args.json)
    outcome = pipeline.run_suite(suite, _common.run_options(args), out, lambda o: _outcome.present(o, out))
    docs, out_dir, code = outcome.docs, outcome.folder, outcome.code
    paths = pipeline.write_report(out_dir, None, 3.0, out_fn=out) if docs is not None and args.report else None
    _say_next(out, docs, out_dir, paths, args.detach)
    if args.json:
        _common.print_json(_run_json(docs, out_dir, code, paths, args.detach))
    return code


def _run_json(docs, out_dir, code: int, paths, detach: bool) -> dict:
    """`run --json`'s document: the folder, the exit code, the cells and the report."""
    return {"results": str(out_dir), "exit_code": code, "detached": bool(docs is None and detach),
            "cells": _common.summary_json(docs) if docs is not None else None,
            "report": _common.report_json(paths) if paths else None}


def _say_next(out, docs, out_dir, paths, detach: bool) -> None:
    """What to run next: the report and compare after results, status after a detached run."""
    if docs is not None and results.ok(docs):
        from .compare import GATE

        folder = shlex.quote(str(out_dir))
        out(f"next: {'' if paths else f'gcbench report {folder} (plots and a page to publish); '}"
            f"gcbench compare {folder} OTHER (verdicts against another run; in CI, --fail-on "
            f"{','.join(GATE)}: the counts a starting heap and load do not move)")
    if docs is None and detach:
        out(f"next: gcbench status {shlex.quote(str(out_dir))}")


def _script_main(args) -> int:
    """`run --script`: the user's script, repeats in fresh processes (two versions interleaved)."""
    import pathlib

    from ..flows import script_runs
    from .compare import GATE

    if any((args.quick, args.backends, args.workloads, args.gc, args.suite != "default")):
        raise UsageError("--script runs your own script: --suite, --quick, --backends, --workloads and --gc choose "
                         "gcbench's own cells and do not go with it")
    name = pathlib.Path(args.script).stem
    out = pathlib.Path(args.out or config.default_out(f"script-{name}")).resolve()  # the script runs elsewhere
    if out.exists() and any(out.iterdir()) and not args.force:
        raise UsageError(f"{out} holds results already: --force adds these runs' to them, or give another --out")
    script, run_sides = script_runs.sides(args.script, args.base, args.head, out)
    for side in run_sides:
        print(f"{side.name}: {side.label}" if len(run_sides) > 1 else f"script: {side.label}", flush=True)
    folders = script_runs.run(script, run_sides, args.repeats or 3, script_runs.split_args(args.script_args),
                              lambda line: print(line, flush=True)).folders
    print(_next_step(folders, ",".join(GATE)))
    return 0


def _next_step(folders: list, gate: str) -> str:
    """What to run next: compare the two sides, or report the one and compare it with another."""
    first = shlex.quote(str(folders[0]))
    if len(folders) == 2:
        return f"next: gcbench compare {first} {shlex.quote(str(folders[1]))} --fail-on {gate}"
    return f"next: gcbench report {first}; gcbench compare {first} OTHER --fail-on {gate}"
