"""Which of a repeat's readings hold under load: the same cells measured on a quiet machine
and beside busy processes (each a Python loop spinning on one core), in alternating runs.

Per cell and condition it prints, as the median over repeats (min-max): the machine's
load as the worker read it (`others_cores`, `cpu_pressure`), the median step in wall
time and in the main thread's CPU time, the GC share in wall time (pauses over the
step's wall time) and in CPU time (pauses' CPU time over the steps' CPU time), and the
full collections. The counts must not move; a time that moves little under load is one a
verdict can use there.

    python benchmarks/load_signals.py [--cells nnx/vit,jax/mlp] [--busy 2] [--rounds 2]
                                      [--steps 60] [--repeats 3] [--batch-size 8] [--out DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

from gcbench.analysing import summary
from gcbench.measuring import results


def spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def busy(n: int):
    procs = [multiprocessing.Process(target=spin, daemon=True) for _ in range(n)]
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


def readings(docs: list[dict]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {k: [] for k in ("others", "pressure", "wall_ms", "cpu_ms", "gc_wall", "gc_cpu",
                                                   "full", "gen0")}
    for d in docs:
        if d["status"] != "ok":
            continue
        ms = d.get("machine_state") or {}
        wall, cpu = np.asarray(d["wall_ns"], float), np.asarray(d["cpu_ns"], float)
        out["others"].append(ms.get("others_cores", float("nan")))
        out["pressure"].append(ms.get("cpu_pressure", float("nan")))
        out["wall_ms"].append(np.median(wall) / 1e6)
        out["cpu_ms"].append(np.median(cpu) / 1e6)
        out["gc_wall"].append(100 * np.sum(d["gc_ns"]) / wall.sum())
        out["gc_cpu"].append(100 * np.sum(d["gc_cpu_ns"]) / cpu.sum())
        out["full"].append(int(summary.full_collections(d).sum()))
        out["gen0"].append(int(summary.collections(d)[:, 0].sum()))
    return out


def fmt(values: list[float]) -> str:
    v = np.asarray(values, float)
    return f"{np.median(v):.3g} ({v.min():.3g}-{v.max():.3g})" if v.size else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", default="nnx/vit,jax/mlp", help="backend/workload pairs, comma-separated")
    ap.add_argument("--busy", type=int, default=2, help="busy processes beside the loaded runs")
    ap.add_argument("--rounds", type=int, default=2, help="quiet and loaded runs, alternating, per cell")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--out", help="keep the results folders here (default: a temporary folder)")
    args = ap.parse_args()
    root = pathlib.Path(args.out or tempfile.mkdtemp(prefix="gcbench-load-"))
    names = ("others", "pressure", "wall_ms", "cpu_ms", "gc_wall", "gc_cpu", "full", "gen0")
    print(f"{args.busy} busy processes beside the loaded runs; {args.rounds} rounds of {args.repeats} repeats x "
          f"{args.steps} steps; results in {root}")
    print("cell condition " + " | ".join(names))
    for spec in args.cells.split(","):
        backend, workload = spec.split("/")
        pooled: dict[str, dict[str, list[float]]] = {"quiet": {}, "loaded": {}}
        for k in range(args.rounds):
            for condition in ("quiet", "loaded"):
                out = root / f"{backend}-{workload}-{condition}-{k}"
                with busy(args.busy if condition == "loaded" else 0):
                    run(out, backend, workload, args)
                for name, vals in readings(results.load_dir(out)).items():
                    pooled[condition].setdefault(name, []).extend(vals)
        for condition, r in pooled.items():
            print(f"{spec} {condition}: " + " | ".join(f"{n} {fmt(r[n])}" for n in names))
        q, lo = pooled["quiet"], pooled["loaded"]
        def ratio(n, lo=lo, q=q):
            return np.median(lo[n]) / np.median(q[n]) if np.median(q[n]) else float("nan")
        print(f"{spec} loaded/quiet: wall {ratio('wall_ms'):.2f}x, CPU {ratio('cpu_ms'):.2f}x, "
              f"GC share wall {ratio('gc_wall'):.2f}x, CPU {ratio('gc_cpu'):.2f}x; full collections "
              f"{sorted(set(q['full']))} quiet, {sorted(set(lo['full']))} loaded")


if __name__ == "__main__":
    main()
