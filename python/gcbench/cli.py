"""The `gcbench` command line: `list`, `run`, `data`."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import sys
import time

from . import config, gcpolicy, results, stats
from . import data as datamod
from .backends import BACKENDS
from .errors import UsageError
from .workloads import WORKLOADS


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit code 2, as for every other usage error
        raise UsageError(f"{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gcbench", description="How much of a training step goes to the garbage collector.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    sub.add_parser("list", help="backends (and whether they are available), workloads, GC policies")

    r = sub.add_parser("run", help="run a suite: one worker process per cell")
    r.add_argument("--suite", default="default", help="shipped suite name (default, quick) or a TOML file")
    r.add_argument("--quick", action="store_true", help="the small 'quick' suite (same as --suite quick)")
    r.add_argument("--backends", help="comma-separated backends, or 'all'")
    r.add_argument("--workloads", help="comma-separated workloads")
    r.add_argument("--gc", help="comma-separated GC policies: default, freeze, disable, manual:K")
    r.add_argument("--steps", type=int, help="timed steps per cell")
    r.add_argument("--warmup", type=int, help="warm-up (compilation) steps per cell, kept apart")
    r.add_argument("--repeats", type=int, help="fresh processes per (backend, workload, policy)")
    r.add_argument("--networks", type=int, help="networks per workload (overrides each workload's default)")
    r.add_argument("--seed", type=int, help="seed of the initial weights and the batch schedule")
    r.add_argument("--timeout", type=float, help="seconds a cell may take before it is stopped")
    r.add_argument("--julia-threads", type=int, help="Julia threads for the Julia backends (networks run on them)")
    r.add_argument("--data", help="folder with the MNIST IDX files (default: $GCBENCH_MNIST, then the cache)")
    r.add_argument("--out", help="results folder (default: results/<suite>-<date>-<time>)")
    r.add_argument("--no-progress", action="store_true", help="no progress bars")
    r.add_argument("--report", action="store_true", help="write the report at the end (into reports/<results name>)")
    _env_arguments(r)

    rep = sub.add_parser("report", help="statistics, plots and a publishable report of a results folder")
    rep.add_argument("results", help="a results folder written by `gcbench run`")
    rep.add_argument("--out", help="report folder (default: reports/<results folder name>)")
    rep.add_argument("--spike-factor", type=float, default=3.0, help="a spike is a step slower than this x median")

    cmp_ = sub.add_parser("compare", help="per cell in both folders: change of median, p99, max/median, GC share")
    cmp_.add_argument("a", help="results folder A (the baseline)")
    cmp_.add_argument("b", help="results folder B")

    mem = sub.add_parser("memory", help="memory of compiled programs: gather gradients and training steps")
    mem.add_argument("--size", default="small,medium,seed",
                     help="comma-separated sizes: small, medium, seed; or one N,M (x is N^3 float32, idx M x 3)")
    mem.add_argument("--index-dtype", default="int32,int16", help="comma-separated index dtypes (int8/16/32/64)")
    mem.add_argument("--backends", default="all", help="backends whose training step is analysed")
    mem.add_argument("--workloads", default="mlp,lenet5,vit", help="workloads whose training step is analysed")
    mem.add_argument("--no-measure", action="store_true", help="do not run the small cases for real")
    mem.add_argument("--out", help="results folder for memory.json (default: results/memory-<date>-<time>)")

    bi = sub.add_parser("bisect", help="one cell across versions of a package, each in its own environment")
    bi.add_argument("--package", required=True, help="the package whose versions are compared, e.g. equinox")
    bi.add_argument("--versions", help="comma-separated versions, oldest first (not with --results)")
    bi.add_argument("--cell", required=True, help="BACKEND/WORKLOAD/POLICY, e.g. equinox-filter/vit/default")
    bi.add_argument("--metric", default="gc_share", help="gc_share (default), p99, max/median, median, full_gc")
    bi.add_argument("--factor", type=float, default=1.5,
                    help="mark the first version whose metric differs from the previous one's by more than this")
    bi.add_argument("--env", metavar="SPEC", help="base environment the versions are pinned into, "
                                                  "e.g. 'python=3.11 jax==0.6.2' (default: this interpreter)")
    bi.add_argument("--rebuild-envs", action="store_true", help="rebuild the environments instead of reusing them")
    bi.add_argument("--results", help="make the table from this results folder instead of running")
    for flag, kind, what in [("--steps", int, "timed steps per version"), ("--warmup", int, "warm-up steps"),
                             ("--repeats", int, "fresh processes per version"), ("--seed", int, "seed"),
                             ("--networks", int, "networks (default: the workload's)"),
                             ("--timeout", float, "seconds a cell may take")]:
        bi.add_argument(flag, type=kind, help=what)
    bi.add_argument("--data", help="folder with the MNIST IDX files")
    bi.add_argument("--out", help="results folder (default: results/bisect-<package>-<date>-<time>)")
    bi.add_argument("--no-progress", action="store_true", help="no progress bars")
    bi.add_argument("--report", action="store_true", help="draw the table into reports/<results name>")

    ev = sub.add_parser("envs", help="the virtual environments gcbench built for --env (list, or clear them)")
    ev.add_argument("action", choices=["list", "clear"])

    sub.add_parser("julia-setup", help="let juliacall install Julia and the Julia packages (online, once)")

    d = sub.add_parser("data", help="where MNIST is found; download it")
    d.add_argument("action", choices=["info", "download"])
    d.add_argument("--data", help="folder to look in or download to")
    return p


def cmd_list(args) -> int:
    print("Backends:")
    for b in BACKENDS.values():
        ok, reason = b.availability()
        state = "available" if ok else f"unavailable: {reason}"
        print(f"  {b.name:<18} {b.language:<7} {state}")
        print(f"  {'':<18} {b.description}")
        policies = ", ".join(p if p != "manual" else "manual:K" for p in b.policies)
        print(f"  {'':<18} workloads: {', '.join(b.workloads)}; policies: {policies}")
    print("Workloads:")
    for w in WORKLOADS.values():
        print(f"  {w.name:<8} {w.params_per_network:>8,} params/network  x{w.default_networks:<4} {w.description}")
    print("GC policies:")
    for name, doc in [
        ("default", "the interpreter's own collector"),
        ("freeze", "collect, then gc.freeze() after warm-up (Python only)"),
        ("disable", "no collection during the timed steps"),
        ("manual:K", "disabled, one full collection every K steps, counted in that step"),
    ]:
        print(f"  {name:<9} {doc}")
    return 0


def _override(suite: config.Suite, args, keys: tuple[str, ...]) -> None:
    """Suite values the command line gives."""
    for key in keys:
        if getattr(args, key) is not None:
            setattr(suite, key, getattr(args, key))


def _suite_from_args(args) -> config.Suite:
    suite = config.load_suite("quick" if args.quick else args.suite)
    if args.backends:
        suite.backends = config.split_list(args.backends)
    if args.workloads:
        suite.workloads = config.split_list(args.workloads)
    if args.gc:
        suite.gc = config.split_list(args.gc)
    _override(suite, args, ("steps", "warmup", "repeats", "seed", "timeout", "julia_threads"))
    if args.networks is not None:
        suite.networks = {w: args.networks for w in suite.workloads}
    if args.env:
        suite.envs = list(args.env)
    return suite.validate()


def format_table(docs: list[dict]) -> str:
    width = max([40] + [len(results.label(d)) for d in docs])
    head = (f"{'cell':<{width}} {'status':<11} {'median ms':>9} {'p99 ms':>8} {'max/med':>7} {'GC %':>6}  "
            "collections per generation (Julia: incremental/full)")
    rows = [head, "-" * len(head)]
    for doc in docs:
        label = results.label(doc)
        if doc["status"] != "ok":
            rows.append(f"{label:<{width}} {doc['status']:<11} {doc['reason'].splitlines()[0] if doc['reason'] else ''}")
            continue
        s = stats.summary(doc)
        colls = "/".join(str(c) for c in s["collections"])
        rows.append(f"{label:<{width}} {'ok':<11} {s['median_ms']:>9.3f} {s['p99_ms']:>8.3f} "
                    f"{s['max_over_median']:>7.1f} {100 * s['gc_share']:>6.2f}  {colls}")
    return "\n".join(rows)


def _env_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env", action="append", metavar="SPEC",
                   help="run the cells in a virtual environment: 'python=3.12 jax==0.8.0 equinox==0.13.2' "
                        "(repeat for several; python= is a version found on PATH or under pyenv, or a path)")
    p.add_argument("--rebuild-envs", action="store_true", help="rebuild the environments instead of reusing them")


def cmd_run(args) -> int:
    suite = _suite_from_args(args)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out_dir = args.out or os.path.join("results", f"{suite.name}-{stamp}")
    docs, out_dir = _run_suite(suite, args, out_dir)
    if docs is None:
        return 130
    failed = sum(d["status"] == "failed" for d in docs)
    if args.report:
        _write_report(out_dir, None, 3.0)
    return 1 if failed else 0


def _run_suite(suite: config.Suite, args, out: str) -> tuple[list[dict] | None, pathlib.Path]:
    """Build the suite's environments, run its cells into `out`, print the table; None when interrupted."""
    from . import envs, runner

    dataset_note = _check_data(args.data)
    out_dir = config.check_out_dir(out)
    cells = suite.cells(args.data)
    command = ["gcbench"] + args.argv
    print(f"gcbench: {len(cells)} cells -> {out_dir}; data: {dataset_note}", flush=True)
    plan = {"suite": suite.name, "command": command, "cells": [c.id for c in cells], "envs": suite.envs,
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    (out_dir / "suite.json").write_text(json.dumps(plan, indent=1))
    t0 = time.monotonic()
    progress = False if args.no_progress else None
    try:
        environments = None
        if suite.envs:
            needed = sorted({m for b in suite.backends for m in BACKENDS[b].requires})
            print(f"gcbench: {len(suite.envs)} environments (in {envs.envs_root()}) with {', '.join(needed)}",
                  flush=True)
            environments = envs.build_all([envs.parse(e) for e in suite.envs], needed, args.rebuild_envs,
                                          progress=progress)
        docs = runner.run_cells(cells, out_dir, command, suite.timeout, progress=progress, environments=environments)
    except KeyboardInterrupt:
        kept = sum(1 for c in cells if (out_dir / f"{c.id}.json").is_file())
        print(f"\ngcbench: interrupted; {kept} finished cells kept in {out_dir}", file=sys.stderr)
        return None, out_dir
    print()
    print(format_table(docs))
    failed = sum(d["status"] == "failed" for d in docs)
    print(f"\n{len(docs)} cells in {time.monotonic() - t0:.0f} s, {failed} failed; results in {out_dir}")
    return docs, out_dir


def _write_report(results_dir: pathlib.Path, out: str | None, spike_factor: float) -> None:
    try:
        from .report import build_report
    except ImportError as e:
        raise UsageError(f"the report needs matplotlib ({e.name} missing): pip install 'gcbench[report]'") from None
    if not spike_factor > 1:
        raise UsageError(f"--spike-factor must be greater than 1, got {spike_factor:g}")
    out_dir = pathlib.Path(out) if out else pathlib.Path("reports") / pathlib.Path(results_dir).resolve().name
    paths = build_report(results_dir, out_dir, spike_factor)
    print(f"report: {paths['markdown']} and {paths['html']} ({len(paths) - 2} plots)")


def cmd_report(args) -> int:
    _write_report(pathlib.Path(args.results), args.out, args.spike_factor)
    return 0


def cmd_compare(args) -> int:
    from .compare import compare_dirs, format_comparison

    print(format_comparison(*compare_dirs(args.a, args.b)))
    return 0


def _check_data(path: str | None) -> str:
    """Validate the data the workers will read, in the manager, so errors come once and early."""
    folder = datamod.locate(path)
    if folder is None:
        return "synthetic (no MNIST found; see `gcbench data info`)"
    datamod.load_mnist(folder)
    return f"real MNIST from {folder}"


def cmd_data(args) -> int:
    if args.action == "download":
        folder = datamod.download(pathlib.Path(args.data) if args.data else None)
        print(f"MNIST training files in {folder}")
        return 0
    folder = datamod.locate(args.data)
    if folder is None:
        print(f"no MNIST found (looked in ${datamod.ENV_VAR} and {datamod.cache_dir()}); "
              "runs use synthetic data. `gcbench data download` fetches it.")
    else:
        ds = datamod.load_mnist(folder)
        print(f"real MNIST: {len(ds)} samples in {folder}")
    return 0


def cmd_memory(args) -> int:
    from . import memory

    sizes = _sizes(args.size)
    dtypes = config.split_list(args.index_dtype)
    backends = list(BACKENDS) if args.backends == "all" else config.split_list(args.backends)
    workloads = config.split_list(args.workloads)
    config.Suite(backends=backends, workloads=workloads).validate()  # names checked as for run
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out_dir = config.check_out_dir(args.out or os.path.join("results", f"memory-{stamp}"))
    doc = memory.run(sizes, dtypes, backends, workloads, not args.no_measure, out_dir, ["gcbench"] + args.argv)
    print(memory.format_tables(doc))
    print(f"\nmemory analysis in {out_dir / 'memory.json'}")
    return 0


def _sizes(text: str) -> list[str]:
    """'small,seed' -> ['small', 'seed']; '16,4096' (one N,M pair) stays whole."""
    parts = config.split_list(text)
    if parts and all(p.isdigit() for p in parts):
        return [",".join(parts)]
    return parts


def cmd_bisect(args) -> int:
    from . import bisect, envs

    cell = bisect.parse_cell(args.cell)
    metric = bisect.get_metric(args.metric)
    bisect.check_factor(args.factor)  # now, not after the runs
    versions = config.split_list(args.versions) if args.versions else None
    if args.results:
        if args.versions is not None and not versions:
            raise UsageError("--versions names no version")
        out_dir = pathlib.Path(args.results)
        docs = results.load_dir(out_dir)
    else:
        if not versions:
            raise UsageError("--versions is needed to run a bisect (or --results to read one)")
        specs = bisect.plan_envs(args.package, versions, envs.parse(args.env) if args.env else envs.EnvSpec(None, ()))
        backend, workload, policy = cell
        suite = config.Suite(name=f"bisect-{envs.normalize(args.package)}", backends=[backend], workloads=[workload],
                             gc=[policy], envs=[s.text for s in specs])
        _override(suite, args, ("steps", "warmup", "repeats", "seed", "timeout"))
        if args.networks is not None:
            suite.networks = {workload: args.networks}
        suite.validate()
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        docs, out_dir = _run_suite(suite, args, args.out or os.path.join("results", f"{suite.name}-{stamp}"))
        if docs is None:
            return 130
    tab = bisect.table(docs, args.package, cell, metric, args.factor, versions)
    if not tab["rows"]:
        raise UsageError(f"{out_dir}: no results of {args.cell} with a known {args.package} version")
    (out_dir / "bisect.json").write_text(json.dumps(tab, indent=1))
    print()
    print(bisect.format_table(tab))
    if args.report:
        _write_report(out_dir, None, 3.0)
    return 0


def cmd_envs(args) -> int:
    from . import envs

    if args.action == "clear":
        print(f"removed {envs.remove_all()} environments from {envs.envs_root()}")
        return 0
    rows = envs.cached()
    if not rows:
        print(f"no environments in {envs.envs_root()}")
        return 0
    for r in rows:
        what = f"{r['spec']}  (Python {r['python']}, built {r['built']})" if r["spec"] else "unfinished: rebuilt when next used"
        print(f"{r['folder'].name:<28} {r['bytes'] / 2**20:>7.0f} MiB  {what}")
    print(f"{len(rows)} environments, {sum(r['bytes'] for r in rows) / 2**30:.1f} GiB in {envs.envs_root()}")
    return 0


def cmd_julia_setup(args) -> int:
    import importlib.util

    from .backends import julia_bridge

    if importlib.util.find_spec("juliacall") is None:
        raise UsageError("juliacall is not installed: pip install 'gcbench[julia]'")
    print("gcbench: starting Julia through juliacall; the first time it downloads Julia and the packages "
          "in gcbench/juliapkg.json (needs the internet, takes minutes)", flush=True)
    ok, reason = julia_bridge.start()
    if not ok:
        raise UsageError(f"Julia setup failed: {reason}")
    print("Julia ready: GCBench loaded; the flux, lux and simplechains backends can run")
    return 0


COMMANDS = {"list": cmd_list, "run": cmd_run, "data": cmd_data, "report": cmd_report, "compare": cmd_compare,
            "julia-setup": cmd_julia_setup, "memory": cmd_memory, "bisect": cmd_bisect,
            "envs": cmd_envs}


def main(argv: list[str] | None = None) -> int:
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        args = build_parser().parse_args(argv)
        args.argv = argv
        return COMMANDS[args.command](args)
    except UsageError as e:
        print(f"gcbench: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
