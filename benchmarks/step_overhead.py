"""What measuring a step costs: gcbench.measure beside the least a probe can be.

Each mode runs a loop of `--steps` steps in a fresh process, the modes taking turns
(`--runs` rounds), and reads the thread's CPU time over the loop (load stretches wall
time, not CPU time much):

- bare: the loop alone;
- minimal: the least a probe can be: `perf_counter_ns` at both ends of a step, its time
  stored into a preallocated array, and a `gc.callbacks` hook writing each collection's
  start and stop time and generation into preallocated arrays;
- gcbench: the loop under `with gcbench.measure(...)` and `with m.step():`.

Bodies: `empty` (nothing: the probe's cost alone, the row the bound is judged on), `work`
(about 2 µs of pure Python: the same cost beside a body, read as the difference of two
larger times, so noisier by a few hundred ns), `collecting` (700 tracked objects made and
dropped a step: about one young collection a step, so the difference from `empty` is what
a collection costs each probe). Prints, per body, what each probe adds to a step (CPU ns,
the median over rounds of each round's difference from bare), gcbench's ratio to the
minimal probe's, and whether gcbench is within issue 66's bound: twice the minimal
probe's cost plus 1 µs a step.

    python benchmarks/step_overhead.py [--steps 100000] [--runs 5] [--json] [--save FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

BOUND_FACTOR, BOUND_NS = 2.0, 1000.0  # a step under gcbench costs at most 2x the limit + 1 µs

SCRIPT = r"""
import gc, sys, time
mode, body_name, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])

def empty():
    pass

def work():
    return sum(range(300))  # about 2 µs

def collecting():
    junk = [[] for _ in range(700)]  # tracked, freed at the step's end: the young count crosses 700 once a step
    junk.append(junk)  # a cycle: the collector frees it

body = {"empty": empty, "work": work, "collecting": collecting}[body_name]
for _ in range(2000):  # warm the body (and the interpreter's specialisation) before any clock
    body()
clock = time.thread_time_ns
if mode == "gcbench":
    import gcbench
    m = gcbench.measure("overhead", capacity=steps)
    c0 = clock()
    with m:
        for _ in range(steps):
            with m.step():
                body()
    spent = clock() - c0
elif mode == "minimal":
    import array
    step_ns = array.array("q", bytes(8 * steps))
    n = 4 * steps + 64
    starts, stops, gens = array.array("q", bytes(8 * n)), array.array("q", bytes(8 * n)), array.array("b", bytes(n))
    at = [0]
    perf = time.perf_counter_ns

    def hook(phase, info):
        i = at[0]
        if i < n:
            if phase == "start":
                starts[i] = perf()
            else:
                stops[i] = perf()
                gens[i] = info["generation"]
                at[0] = i + 1

    gc.callbacks.append(hook)
    c0 = clock()
    for s in range(steps):
        t = perf()
        body()
        step_ns[s] = perf() - t
    spent = clock() - c0
    gc.callbacks.remove(hook)
else:
    c0 = clock()
    for s in range(steps):
        body()
    spent = clock() - c0
print(spent / steps)
"""

MODES = ("bare", "minimal", "gcbench")
BODIES = ("empty", "work", "collecting")


def one(mode: str, body: str, steps: int) -> float:
    """CPU ns a step of `body` under `mode`, in a fresh process."""
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode, body, str(steps)], capture_output=True, text=True,
                         check=True, timeout=600)
    return float(out.stdout.strip().splitlines()[-1])


def measure(steps: int, runs: int, bodies: tuple[str, ...] = BODIES) -> dict:
    """Per body: the CPU ns a step of each mode, per round (the modes take turns in a round)."""
    got: dict = {body: {mode: [] for mode in MODES} for body in bodies}
    for _ in range(runs):
        for body in bodies:
            for mode in MODES:
                got[body][mode].append(one(mode, body, steps))
    return got


def overheads(got: dict) -> dict:
    """Per body: what the minimal probe and gcbench add to a step (the median over rounds of
    each round's difference from bare), gcbench's ratio, and its bound."""
    out = {}
    for body, modes in got.items():
        added = {mode: statistics.median(m - b for m, b in zip(modes[mode], modes["bare"], strict=True))
                 for mode in ("minimal", "gcbench")}
        limit = max(added["minimal"], 1.0)
        out[body] = {"bare_ns": statistics.median(modes["bare"]), "minimal_ns": added["minimal"],
                     "gcbench_ns": added["gcbench"], "ratio": added["gcbench"] / limit,
                     "bound_ns": BOUND_FACTOR * limit + BOUND_NS,
                     "within": added["gcbench"] <= BOUND_FACTOR * limit + BOUND_NS,
                     "rounds": {mode: modes[mode] for mode in MODES}}
    if "collecting" in out and "empty" in out:  # what a collection (about one a step) costs each probe
        out["per_collection"] = {mode: out["collecting"][f"{mode}_ns"] - out["empty"][f"{mode}_ns"]
                                 for mode in ("minimal", "gcbench")}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5, help="rounds of fresh processes (the modes take turns)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--save", metavar="FILE", help="also write the figures, with every round, to FILE")
    args = ap.parse_args()
    got = overheads(measure(args.steps, args.runs))
    if args.save:
        with open(args.save, "w") as f:
            json.dump({"steps": args.steps, "runs": args.runs, **got}, f, indent=1)
            f.write("\n")
    if args.json:
        print(json.dumps(got))
        return 0
    print(f"CPU ns a step added to the bare loop ({args.steps:,} steps, median of {args.runs} rounds of fresh "
          "processes)")
    print(f"{'body':<11} {'bare':>8} {'minimal':>8} {'gcbench':>8} {'ratio':>6}  bound (2x minimal + 1 µs)")
    for body in BODIES:
        r = got[body]
        print(f"{body:<11} {r['bare_ns']:>8,.0f} {r['minimal_ns']:>8,.0f} {r['gcbench_ns']:>8,.0f} "
              f"{r['ratio']:>5.1f}x  {r['bound_ns']:,.0f}: {'within' if r['within'] else 'OVER'}")
    per = got["per_collection"]
    print(f"a collection: +{per['minimal']:,.0f} ns minimal, +{per['gcbench']:,.0f} ns gcbench")
    return 0


if __name__ == "__main__":
    sys.exit(main())
