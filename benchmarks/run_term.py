"""The run-to-run term: how far the level of a whole run (one `gcbench run`) moves on this
machine, beyond what its repeats explain, measured from separate runs of the same cells.

The runs: every committed report (each was one `gcbench run`, made hours or days apart)
and the runs this benchmark kept. `--runs N` adds N runs of small cells (jax and
equinox-filter on mlp, default policy, 3 repeats of 300 steps), each a separate
invocation, `--every` minutes apart, waiting for a quiet machine before each, kept as
`benchmarks/run_term/runK.tar.gz` (the archive a report carries). Two runs hold the same
cell when backend, workload, policy, batch, networks, data, machine kind, Python and
every package version agree (the step count may differ: the reports ran 100, 150 and
300 steps, and what that moves lands in the term, conservatively). Only quiet repeats
count; a run that started within `--apart` minutes of the last one used on its kind of
machine is left out (back to back, runs share the machine's moment and understate the
term: the first 6 runs kept here were made within 11 minutes).

The estimate (`stats.run_term`): per cell, the spread of the runs' mean log medians beyond
what the spread of repeats inside a run explains (one-way random effects, pooled over the
cells), with a 95 % interval from the chi-square distribution of the between-run mean
square on (distinct runs - 1) degrees of freedom. compare widens every time test of two
runs apart by it (`comparison.RUN_SD`, `comparison.RUN_DF`: tests/test_readme_claims.py holds
them to `benchmarks/run_term/estimate.json`, which this writes), and prints detectable
changes that include it.

    python benchmarks/run_term.py [--runs 3 --every 60]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import math
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

from gcbench.analysing import comparison, stats, summary
from gcbench.measuring import results
from gcbench.publishing import archive

ROOT = pathlib.Path(__file__).resolve().parent.parent
HERE = ROOT / "benchmarks" / "run_term"
APART = 20.0  # minutes between the starts of two runs used: runs back to back share the machine's moment
CELLS = ["--backends", "jax,equinox-filter", "--workloads", "mlp", "--gc", "default", "--repeats", "3",
         "--steps", "300"]


def run_once(target: pathlib.Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "run"
        subprocess.run([sys.executable, "-m", "gcbench", "run", *CELLS, "--out", str(out), "--no-progress"],
                       check=True, stdout=subprocess.DEVNULL)
        archive.pack(out, target)


def started(docs: list) -> float:
    """When a run's first repeat started, in seconds since the epoch (0 where unknown)."""
    times = [t for t in map(results.started, docs) if t is not None]
    return min(times) if times else 0.0


def kept_runs(folder: pathlib.Path = HERE) -> list[tuple[str, list]]:
    """(name, ok results) of each run this benchmark kept."""
    runs = []
    for path in sorted(folder.glob("run*.tar.gz"), key=lambda p: int(p.name[3:].split(".")[0])):
        with archive.opened(path) as f:
            runs.append((path.name, [d for d in results.load_dir(f) if d.status == "ok"]))
    return runs


def report_runs(root: pathlib.Path = ROOT) -> list[tuple[str, list]]:
    """(name, ok CPU results) of each committed report: each was one `gcbench run`, made
    hours or days apart from the others."""
    sys.path.insert(0, str(root / "tests"))
    import committed

    runs = []
    for folder in committed.reports(archive.NAME):
        with archive.opened(folder / archive.NAME) as f:
            docs = [d for d in results.load_dir(f, allow_empty=True) if d.status == "ok"
                    and (d.metadata or {}).get("jax_backend", "cpu") == "cpu"]
        if docs:
            runs.append((f"reports/{folder.name}", docs))
    return runs


def same_cell(d: dict) -> tuple:
    """What makes two runs' repeats the same cell: backend, workload, policy, batch, networks,
    data kind, machine kind, Python and every package version (not the step count: the
    committed reports ran 100, 150 and 300 steps, and what that moves lands in the term)."""
    md = d.metadata or {}
    packages = tuple(sorted((k, v) for k, v in (md.get("packages") or {}).items() if k != "juliacall"))
    return (summary.cell_label(summary.cell_key(d)), results.batch_size(d), d.networks,
            (d.data or {}).get("kind"), md.get("cpu", "?"), md.get("python"), packages)


def levels(runs: list[tuple[str, list]] | None = None, apart_minutes: float = 0.0) -> tuple[dict, list[str]]:
    """{cell: {run name: [log median per quiet repeat]}} from the runs (default: the kept ones
    and the committed reports) that started at least `apart_minutes` after the previous run
    used on that kind of machine, and a line per run naming its machine, its load and
    whether it was used. Runs of two kinds of machine are separate cells, whose terms are
    pooled."""
    runs = kept_runs() + report_runs() if runs is None else runs
    cells: dict = collections.defaultdict(dict)
    heads, used = [], set()
    last: dict[str, float] = collections.defaultdict(lambda: -math.inf)
    for when, name, docs in sorted((started(docs), name, docs) for name, docs in runs):
        kind = (docs[0].metadata or {}).get("cpu", "?") if docs else "?"
        quiet = [d for d in docs if not summary.repeat_load(d)]
        by_cell = collections.defaultdict(list)
        for d in quiet:
            by_cell[same_cell(d)].append(math.log(float(np.median(d.wall_ns)) / 1e6))
        usable = {c: x for c, x in by_cell.items() if len(x) >= 2}
        if when - last[kind] >= 60 * apart_minutes and usable:
            for cell, x in usable.items():
                cells[cell][name] = x
            last[kind] = when
            used.add(name)
        stamp = time.strftime("%Y-%m-%d %H:%M", time.gmtime(when)) if when else "time unknown"
        heads.append((name, f"{name} ({kind}, {stamp} UTC): {len(docs)} repeats, {len(quiet)} quiet, "
                            f"{summary.describe_load(docs) or 'unloaded'}"))
    shared = {c: r for c, r in cells.items() if len(r) >= 2}
    behind = {name for r in shared.values() for name in r}
    notes = [head + ("" if name in behind else "; no cell in common with another run" if name in used
                     else "; not used") for name, head in heads]
    return shared, notes


def estimate(apart_minutes: float = APART) -> tuple[dict, list[str]]:
    """stats.run_term over the cells measured in two or more of the runs used, with the
    number of distinct runs behind them (the cells of one run share its shift)."""
    cells, notes = levels(apart_minutes=apart_minutes)
    distinct = sorted({name for runs in cells.values() for name in runs})
    est = stats.run_term([list(r.values()) for r in cells.values()], runs=len(distinct))
    return {**dataclasses.asdict(est), "from": distinct, "apart_minutes": apart_minutes,
            "without": leave_one_out(cells, distinct)}, notes


def leave_one_out(cells: dict, distinct: list[str]) -> dict[str, dict | None]:
    """The estimate again with each run left out ({run: its run_sd and interval}, None where
    no cell is left in two runs): a term that one run carries is not a property of the machine."""
    out: dict[str, dict | None] = {}
    for name in distinct:
        kept = {c: {r: x for r, x in runs.items() if r != name} for c, runs in cells.items()}
        kept = {c: r for c, r in kept.items() if len(r) >= 2}
        left = sorted({r for runs in kept.values() for r in runs})
        if not kept:
            out[name] = None
            continue
        est = stats.run_term([list(r.values()) for r in kept.values()], runs=len(left))
        out[name] = {"cells": est.cells, "runs": est.runs, "run_sd": round(est.run_sd, 5), "low": round(est.low, 5),
                     "high": round(est.high, 5)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=0, help="runs to add (each about 2.5 minutes)")
    ap.add_argument("--every", type=float, default=30.0, help="minutes from one added run's start to the next's")
    ap.add_argument("--apart", type=float, default=APART,
                    help="minutes a kept run must start after the previous one used, to be used")
    a = ap.parse_args()
    HERE.mkdir(exist_ok=True)
    have = len(list(HERE.glob("run*.tar.gz")))
    import os

    from gcbench.core import machineload

    next_start = time.time()
    for k in range(have, have + a.runs):
        time.sleep(max(0.0, next_start - time.time()))
        while (machineload.now(os.cpu_count(), 2.0) or {}).get("others_cores", 0) > 0.3:  # wait for quiet
            time.sleep(60)
        next_start = time.time() + 60 * a.every
        print(f"run {k + 1} of {have + a.runs} at {time.strftime('%H:%M')} ...", flush=True)
        run_once(HERE / f"run{k}.tar.gz")
    est, notes = estimate(a.apart)
    print("\n".join(notes))
    print(f"\n{est['cells']} cells measured in 2 or more of {est['runs']} separate runs, {est['repeats']} repeats each")
    print(f"spread between repeats inside a run: {100 * est['within_sd']:.1f} %")
    print(f"run-to-run term (a run's own level, per cell): {100 * est['run_sd']:.1f} % "
          f"(95 % {100 * est['low']:.1f}-{100 * est['high']:.1f} %); "
          f"comparison.RUN_SD = {100 * comparison.RUN_SD:.1f} %")
    for name, left in est["without"].items():
        print(f"without {name}: " + ("no cell left in two runs" if left is None else
                                     f"{100 * left['run_sd']:.1f} % (95 % {100 * left['low']:.1f}-"
                                     f"{100 * left['high']:.1f} %) from {left['cells']} cells in {left['runs']} runs"))
    for n in (3, 6, 10):
        d = stats.detectable_change(est["within_sd"], n, n, comparison.ALPHA, run_sd=est["run_sd"],
                                    run_df=est["runs"] - 1)
        print(f"two runs apart, {n} repeats a side: smallest detectable change of a median "
              f"{'none below 100x' if d is None else f'{100 * d:.0f} %'}")
    (HERE / "estimate.json").write_text(json.dumps({k: round(v, 5) if isinstance(v, float) else v
                                                    for k, v in est.items()}, indent=1) + "\n")
    print(f"written to {(HERE / 'estimate.json').relative_to(ROOT)}")


if __name__ == "__main__":
    main()
