"""What travels between machines: the same cells started from different heaps.

Two machines with the same interpreter and packages start a loop from heaps that differ by
a few objects (measured: 13 in the first timed step, Intel Xeon against AMD EPYC), and a
full collection waits until the objects promoted since the last one exceed a quarter of
the oldest generation: the heap a loop starts from sets the phase of its collector's
schedule. This script starts the quick suite's cells (the ViT at batch 8) from heaps that
differ on purpose, each in a fresh process, and says, per quantity, whether it stayed
identical:

- K long-lived container objects (empty lists) allocated before anything is imported,
  K from 0 to 100,000;
- another import order (jax, equinox and flax before gcbench's modules);
- JAX's persistent compilation cache, cold and then warm.

Per run: the tracked-allocation pressure of the first timed step and the mean of the
others, collections of every generation (in steps and between them), full collections
and the steps they fell at. The oldest generation's size at the first timed step is
read in a run of its own (reading it allocates), to place K against the heap.

    python benchmarks/starting_heaps.py [--steps 100] [--cells equinox-filter,equinox-partition,nnx]
                                        [--heaps 0,13,100,1000,10000,100000] [--jobs 2] [--json FILE]

The table it prints is the one in docs/statistics.md ("What travels between machines").
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve()


def child(args: argparse.Namespace) -> None:
    """One run, in this fresh process: the starting heap first, then the worker's imports."""
    keep = [[] for _ in range(args.k)]  # noqa: F841 - alive until the process ends: long-lived
    if args.order == "jax-first":
        # isort: off - the order the measured runs used
        import equinox  # noqa: F401
        import flax.nnx  # noqa: F401
        import jax  # noqa: F401
        # isort: on
    import gc

    import numpy as np

    from gcbench import child as _child  # noqa: F401 - the worker's own imports, in its order
    from gcbench.measuring import gcpolicy, worker
    from gcbench.measuring.cell import Cell

    heap = {}
    if args.heap:  # reading the oldest generation allocates: only in a run of its own
        before = gcpolicy.GCPolicy.before_timed

        def reading(self):
            heap.update(oldest=len(gc.get_objects(2)), tracked=len(gc.get_objects()))
            before(self)

        gcpolicy.GCPolicy.before_timed = reading  # type: ignore[method-assign]
    cell = Cell(args.backend, "vit", "default", 0, 1, 0, args.steps, 3, 0, 10, batch_size=8)
    doc = worker.run_cell(cell, progress=lambda *a: None)
    from gcbench.analysing import rates, summary

    pressure = np.asarray(doc.gc_pressure)
    period = rates.full_period(doc)
    per_gen = summary.collections_by_generation(doc)
    full = summary.full_collections(doc)
    print(json.dumps({"first": int(pressure[0]), "rest": summary.pressure_per_step(doc)[0],
                      "rest_all": float(pressure[1:].mean()),
                      "rest_values": sorted({int(x) for x in pressure[1:]}), "generations": per_gen,
                      "full_at": np.repeat(np.arange(len(full)), full).tolist(),
                      "promotions": rates.promotions_per_step(doc), "growth": rates.growth_per_step(doc),
                      "examined": rates.examined_per_step(doc),
                      "period": period.period if period else None, "oldest_heap": period.heap if period else None,
                      **heap}))


def run(backend: str, steps: int, k: int = 0, order: str = "child", cache: str | None = None,
        heap: bool = False) -> dict:
    env = dict(os.environ)
    if cache:
        env.update(JAX_COMPILATION_CACHE_DIR=cache, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                   JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="-1")
    cmd = [sys.executable, str(HERE), "--child", "--backend", backend, "--steps", str(steps), "--k", str(k),
           "--order", order] + (["--heap"] if heap else [])
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def conditions(heaps: list[int], cache_dir: str) -> list[tuple[str, dict]]:
    out = [(f"K = {k:,}", {"k": k}) for k in heaps]
    out.append(("jax, equinox, flax imported first", {"order": "jax-first"}))
    out.append(("compilation cache, cold", {"cache": cache_dir}))
    out.append(("compilation cache, warm", {"cache": cache_dir}))
    return out


def verdicts(rows: list[dict]) -> dict[str, str]:
    """Per quantity, over one cell's runs: identical, or the range it took."""
    def spread(values):
        values = list(values)
        if not values:  # no run read it (tracked growth needs MIN_GROWTH_STEPS steps)
            return "not read"
        return "identical" if len(set(map(str, values))) == 1 else f"{min(values):g}-{max(values):g}"
    total = [sum(r["generations"]) for r in rows]
    full = [len(r["full_at"]) for r in rows]
    return {"pressure per step (after the first)": spread(r["rest"] for r in rows),
            "promotions per step": spread(round(r["promotions"], 2) for r in rows),
            "tracked objects kept per step": spread(round(r["growth"], 2) for r in rows if r["growth"] is not None),
            "objects examined per step": spread(round(r["examined"]) for r in rows if r["examined"] is not None),
            "first step's pressure": spread(r["first"] for r in rows),
            "collections, every generation": spread(total),
            "full collections": spread(full),
            "their steps": "identical" if len({tuple(r["full_at"]) for r in rows}) == 1 else "moved"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--cells", default="equinox-filter,equinox-partition,nnx")
    ap.add_argument("--heaps", default="0,13,100,1000,10000,100000")
    ap.add_argument("--jobs", type=int, default=2, help="runs at once (counts do not depend on load)")
    ap.add_argument("--json", help="also write every run's readings here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--backend", default="equinox-filter", help=argparse.SUPPRESS)
    ap.add_argument("--k", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--order", default="child", help=argparse.SUPPRESS)
    ap.add_argument("--heap", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    heaps = [int(x) for x in args.heaps.split(",")]
    everything: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="gcbench-heaps-") as tmp:
        for backend in args.cells.split(","):
            cache = str(pathlib.Path(tmp, backend))
            conds = conditions(heaps, cache)
            with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
                heap = pool.submit(run, backend, args.steps, heap=True)
                futures = [pool.submit(run, backend, args.steps, **kw) for _, kw in conds[:-1]]
                rows = [f.result() for f in futures]
            rows.append(run(backend, args.steps, cache=cache))  # warm: after the cold run filled the cache
            oldest = heap.result()
            everything[backend] = [dict(r, condition=name) for (name, _), r in zip(conds, rows, strict=True)]
            print(f"\n{backend}/vit/default, {args.steps} timed steps; the oldest generation holds "
                  f"{oldest['oldest']:,} of {oldest['tracked']:,} tracked objects at the first timed step\n")
            print("| starting heap | pressure, first step | pressure per step after it | promotions per step "
                  "| examined per step | collections (gen 0/1/2) | full | at steps |")
            print("|---|---:|---:|---:|---:|---|---:|---|")
            for (name, _), r in zip(conds, rows, strict=True):
                gens = r["generations"]
                print(f"| {name} | {r['first']:,} | {r['rest']:,.2f} | {r['promotions']:,.2f} "
                      f"| {r['examined'] or 0:,.0f} "
                      f"| {sum(gens):,} ({'/'.join(map(str, gens))}) "
                      f"| {len(r['full_at'])} | {', '.join(map(str, r['full_at'])) or '-'} |")
            print()
            for quantity, word in verdicts(rows).items():
                print(f"- {quantity}: {word}")
            everything[backend].append({"oldest": oldest})
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(everything, indent=1))


if __name__ == "__main__":
    main()
