"""What the commands share: the arguments that shape a suite and its cells, how a command
speaks (standard output, or standard error when `--json` takes standard output), and its
JSON. The flow they run is `gcbench.flows.pipeline`."""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys

from ..analysing import summary
from ..core import metadata, schemas
from ..flows.options import RunOptions
from ..measuring.results import ResultDoc
from ..running import cluster_options, config


def add_env_arguments(p: argparse.ArgumentParser, repeatable: bool = True) -> None:
    if repeatable:
        p.add_argument("--env", action="append", metavar="SPEC",
                       help="run the cells in a virtual environment: 'python=3.12 jax==0.8.0 equinox==0.13.2' "
                            "(repeat for several; python= is a version found on PATH or under pyenv, or a path)")
    p.add_argument("--rebuild-envs", action="store_true", help="rebuild the environments instead of reusing them")


def suite_defaults(*suites: config.Suite) -> dict[str, str]:
    """Per suite key, its default as help says it: the one value, or each suite's."""
    def show(value) -> str:
        if isinstance(value, dict):  # per workload, the others at gcbench's own
            return ", ".join([*(f"{k} {v}" for k, v in value.items()), f"others {config.BATCH_SIZE}"])
        return f"{value:g}" if isinstance(value, float) else str(value)

    out = {}
    for key in ("steps", "warmup", "repeats", "batch_size", "bookkeeping", "seed", "timeout", "julia_threads"):
        values = {suite.name: show(getattr(suite, key)) for suite in suites}
        if len(set(values.values())) == 1:
            out[key] = f"(default: {next(iter(values.values()))})"
        else:
            out[key] = "(default: the suite's: " + "; ".join(f"{v} in {k}" for k, v in values.items()) + ")"
    return out


def shipped_suite_defaults() -> dict[str, str]:
    """`suite_defaults` of the suites that ship (run's, where a suite file may say otherwise)."""
    out = suite_defaults(*(config.load_suite(name) for name in config.shipped_suites()))
    return {k: v if "the suite's" in v else f"(default: the suite's: {v[len('(default: '):-1]} in every shipped suite)"
            for k, v in out.items()}


def add_cell_options(p: argparse.ArgumentParser, defaults: dict[str, str]) -> None:
    """The options that shape a cell, shared by run, bisect and explain; `defaults` says, per
    key, what each is when left out (`suite_defaults`)."""
    def d(key: str) -> str:
        return f" {defaults[key]}" if key in defaults else ""

    p.add_argument("--steps", type=int, help="timed steps per repeat" + d("steps"))
    p.add_argument("--warmup", type=int, help="warm-up (compilation) steps per repeat, kept apart" + d("warmup"))
    p.add_argument("--networks", type=int,
                   help="networks per workload (default: each workload's own, as `gcbench list` shows)")
    p.add_argument("--batch-size", type=int, help="examples per step, for every workload" + d("batch_size"))
    p.add_argument("--bookkeeping", choices=config.BOOKKEEPING,
                   help="'metrics': the loop keeps a dict of step and loss per network per step, as many loops do"
                        + d("bookkeeping"))
    p.add_argument("--seed", type=int, help="seed of the initial weights and the batch schedule" + d("seed"))
    p.add_argument("--timeout", type=float, help="seconds a repeat may take before it is stopped" + d("timeout"))
    p.add_argument("--julia-threads", type=int,
                   help="Julia threads for the Julia backends (networks run on them)" + d("julia_threads"))
    p.add_argument("--data", help="folder with the MNIST IDX files (default: $GCBENCH_MNIST, then the cache)")


def apply_overrides(suite: config.Suite, args) -> None:
    """Suite values the command line gives."""
    for key in ("steps", "warmup", "repeats", "seed", "timeout", "julia_threads", "bookkeeping"):
        if getattr(args, key, None) is not None:
            setattr(suite, key, getattr(args, key))
    if getattr(args, "batch_size", None) is not None:
        suite.batch_size = args.batch_size
    if getattr(args, "networks", None) is not None:
        suite.networks = dict.fromkeys(suite.all_workloads(), args.networks)
    if getattr(args, "alloc_blocks", False):
        suite.alloc_blocks = True


def run_options(args: argparse.Namespace) -> RunOptions:
    """How the run goes, as the command line says (options a command lacks keep their defaults)."""
    return RunOptions(argv=tuple(args.argv), out=getattr(args, "out", None), data=getattr(args, "data", None),
                      resume=getattr(args, "resume", False), force=getattr(args, "force", False),
                      executor=getattr(args, "executor", "local"), detach=getattr(args, "detach", False),
                      progress=not getattr(args, "no_progress", False),
                      fork_workers=not getattr(args, "fresh_interpreters", False),
                      rebuild_envs=getattr(args, "rebuild_envs", False), slurm=slurm_given_on(args))


class Output:
    """Where a command's words go: standard output, or standard error when standard output
    carries JSON (`--json`)."""

    def __init__(self, as_json: bool = False):
        self.as_json = as_json
        self.stream = sys.stderr if as_json else sys.stdout

    def __call__(self, *parts) -> None:
        print(*parts, file=self.stream, flush=True)


def summary_json(docs: list[ResultDoc]) -> list[dict]:
    """The per-cell summary in machine-readable form (for --json): `summary.record` per cell."""
    return [summary.record(cs) for cs in summary.summarize_all(docs)]


def print_json(doc: dict) -> None:
    """`doc` as JSON that every parser reads, headed by the gcbench that wrote it
    (`"gcbench": {"version", "commit"}`): an infinite or undefined number (a ratio against
    zero full collections, say) is null, never `Infinity` or `NaN`."""
    json.dump(jsonable({"gcbench": metadata.gcbench_identity(), **doc}), sys.stdout, indent=1, allow_nan=False)
    sys.stdout.write("\n")


def jsonable(x):
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set)):
        return [jsonable(v) for v in x]
    if isinstance(x, (str, bool, int)) or x is None:
        return x
    if hasattr(x, "item"):  # numpy scalars
        return jsonable(x.item())
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    return str(x)


def add_json_argument(p, what: str) -> None:
    """`--json`: `what` as JSON on standard output (headed by the gcbench that wrote it);
    the command's words go to standard error."""
    p.add_argument("--json", action="store_true",
                   help=f"print {what} as JSON on standard output (words and progress go to standard error)")


def report_json(paths: dict) -> dict:
    """What `write_report` wrote, for --json."""
    return {"folder": str(paths["html"].parent), "markdown": str(paths["markdown"]), "html": str(paths["html"]),
            "archive": str(paths["archive"]), "plots": sorted(str(p) for p in paths.values()
                                                              if isinstance(p, pathlib.Path) and p.suffix == ".png"),
            "warnings": list(paths.get("warnings", []))}


def slurm_given_on(args: argparse.Namespace) -> dict:
    """The `--slurm-*` values a parsed command line gives (those not given left out)."""
    return {k: v for k in cluster_options.SlurmOptions.KEYS if (v := getattr(args, f"slurm_{k}", None)) is not None}


def add_executor_arguments(p: argparse.ArgumentParser) -> None:
    """`--executor` and the `--slurm-*` options, for run, reproduce and bisect."""
    p.add_argument("--executor", choices=schemas.EXECUTORS, default="local",
                   help="where repeats run: here (local, the default), as SLURM job arrays (slurm), or through "
                        "submitit's local executor (submitit-local: the SLURM path with jobs as local processes)")
    p.add_argument("--fresh-interpreters", action="store_true",
                   help="start each repeat as a fresh Python interpreter (about 1 s more a repeat), instead of "
                        "forking it from a process that imported its backend once (docs/internals.md, "
                        "gcbench.running.warm_workers)")
    p.add_argument("--slurm-partition", help="SLURM partition of the jobs")
    p.add_argument("--slurm-time", type=int, help="minutes a job may run (default 120)")
    p.add_argument("--slurm-gpus", type=int, help="GPUs per job (--gres=gpu:N)")
    p.add_argument("--slurm-account", help="SLURM account to charge")
    p.add_argument("--slurm-parallelism", type=int, help="jobs of one array running at once (default 16)")
    p.add_argument("--detach", action="store_true",
                   help="with a scheduler: return once the jobs are submitted (then `gcbench status FOLDER`)")
