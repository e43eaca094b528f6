"""How far load alone moves each timed quantity: A/As of the same cells, quiet against
graded load.

Per cell, runs of `--repeats` fresh processes alternate between conditions, round by
round: quiet, one, two and four busy processes (each a Python loop spinning on one core),
and a memory-bandwidth hog (numpy copying 64 MiB arrays, one process). For each condition
and quantity it prints the ratio to the quiet runs of the same round (loaded / quiet, the
geometric mean over rounds, with the largest single round beside it):

- the median and the mean step, in wall time;
- the GC share in wall time (pauses over the loop's iteration time) and in the main
  thread's CPU time (the pauses' CPU time over the steps' CPU time);
- the collector's CPU time per full collection, and the main thread's CPU time per step
  outside the collector;

and the load the repeats read (`others_cores`). Collection counts are printed to show
they do not move. The ratios at one and two busy processes are what compare's load
margin rests on (`compare.LOAD_MARGIN`, docs/statistics.md "On a busy machine").

    python benchmarks/load_margins.py [--cells nnx/vit,equinox-partition/vit] [--rounds 2]
                                      [--steps 60] [--repeats 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

from gcbench.analysing import summary
from gcbench.measuring import results

CONDITIONS = ("quiet", "1 busy", "2 busy", "4 busy", "memory hog")


def spin() -> None:
    while True:
        pass


def hog() -> None:
    a, b = np.ones(8 << 20), np.empty(8 << 20)  # 64 MiB each: far beyond any cache
    while True:
        np.copyto(b, a)


@contextlib.contextmanager
def condition(name: str):
    targets = {"quiet": [], "1 busy": [spin], "2 busy": [spin] * 2, "4 busy": [spin] * 4,
               "memory hog": [hog]}[name]
    procs = [multiprocessing.Process(target=t, daemon=True) for t in targets]
    for p in procs:
        p.start()
    try:
        yield
    finally:
        for p in procs:
            p.terminate()
            p.join()


def run(out: pathlib.Path, backend: str, workload: str, args) -> None:
    cmd = [sys.executable, "-m", "gcbench", "run", "--backends", backend, "--workloads", workload, "--gc", "default",
           "--steps", str(args.steps), "--repeats", str(args.repeats), "--batch-size", str(args.batch_size),
           "--networks", "1", "--out", str(out), "--no-progress", "--force"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def readings(docs: list) -> dict[str, float]:
    """The per-repeat quantities of one run, as geometric means over its repeats."""
    per: dict[str, list[float]] = {k: [] for k in ("median", "mean", "share_wall", "share_cpu", "gc_cpu_per_full",
                                                     "cpu_outside_gc", "others", "full", "collections")}
    for d in docs:
        if d.status != "ok":
            continue
        wall, cpu = np.asarray(d.wall_ns, float), np.asarray(d.cpu_ns, float)
        gc_cpu = np.asarray(d.gc_cpu_ns, float)
        full = int(summary.full_collections(d).sum())
        per["median"].append(np.median(wall) / 1e6)
        per["mean"].append(float(summary.iterations(d).mean()) / 1e6)
        per["share_wall"].append(summary.gc_share(d))
        per["share_cpu"].append(summary.cpu_gc_share(d) or 0.0)
        per["gc_cpu_per_full"].append(gc_cpu.sum() / 1e6 / full if full else float("nan"))
        per["cpu_outside_gc"].append((cpu.sum() - gc_cpu.sum()) / len(cpu) / 1e6)
        per["others"].append((d.machine_state or {}).get("others_cores", float("nan")))
        per["full"].append(full)
        per["collections"].append(sum(summary.collections_by_generation(d)))
    return {k: _mean(v, geometric=k not in ("others", "full", "collections")) for k, v in per.items() if v}


def _mean(values: list[float], geometric: bool) -> float:
    """The mean of the values read (NaN: not read, as the CPU time per full collection of a
    run that made none); NaN where none was."""
    x = np.asarray(values, float)
    x = x[~np.isnan(x)]
    if not len(x):
        return float("nan")
    return float(np.exp(np.mean(np.log(np.maximum(x, 1e-12))))) if geometric else float(np.mean(x))


RATIOS = ("median", "mean", "share_wall", "share_cpu", "gc_cpu_per_full", "cpu_outside_gc")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", default="nnx/vit,equinox-partition/vit")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--conditions", default=",".join(CONDITIONS))
    ap.add_argument("--json", help="also write every run's readings here")
    args = ap.parse_args()
    conditions = args.conditions.split(",")
    root = pathlib.Path(tempfile.mkdtemp(prefix="gcbench-load-margins-"))
    raw: dict = {}
    for spec in args.cells.split(","):
        backend, workload = spec.split("/")
        for k in range(args.rounds):
            for name in conditions:
                out = root / f"{backend}-{workload}-{name.replace(' ', '_')}-{k}"
                with condition(name):
                    run(out, backend, workload, args)
                raw.setdefault(spec, {}).setdefault(name, []).append(readings(results.load_dir(out)))
                print(f"{spec} round {k + 1} {name}: {json.dumps(raw[spec][name][-1])}", flush=True)
    print(f"\n{args.rounds} rounds of {args.repeats} repeats x {args.steps} steps per condition; ratios to the quiet "
          "runs of the same round: geometric mean over rounds (largest round)\n")
    print("| cell | condition | others' cores | " + " | ".join(RATIOS) + " | full, collections |")
    print("|---|---|---:|" + "---:|" * len(RATIOS) + "---|")
    for spec, by in raw.items():
        quiet = by["quiet"]
        for name in conditions:
            rows = by[name]
            cells = []
            for q in RATIOS:
                r = np.array([row[q] / base[q] for row, base in zip(rows, quiet, strict=True)])
                r = r[~np.isnan(r)]  # a quantity a round did not read (no full collection)
                if not len(r):
                    cells.append("-")
                    continue
                far = r[np.argmax(np.abs(np.log(r)))]
                cells.append(f"x{np.exp(np.mean(np.log(r))):.2f} ({far:.2f})")
            counts = sorted({(row["full"], row["collections"]) for row in rows})
            others = np.mean([row["others"] for row in rows])
            print(f"| {spec} | {name} | {others:.2f} | " + " | ".join(cells) +
                  f" | {', '.join(f'{f:g}, {c:g}' for f, c in counts)} |")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
