"""Does importing and running `gcbench.measure` move the schedule of the loop it measures?

A pure-Python loop that keeps `--keep` objects a step (and, with `--cyclic`, makes that
many objects of cyclic garbage), `--steps` steps, each mode in fresh processes:

- bare: the loop alone, its collections counted by a `gc.callbacks` hook of its own;
- minimal: the least a probe can be, `perf_counter_ns` at both ends of a step and a
  `gc.callbacks` hook writing start and stop times and the generation into preallocated
  arrays (`array`, untracked);
- gcbench: the same loop under `with gcbench.measure(...)` and `with m.step():`;
- explain: the same, explained (`gcbench.measure(..., explain=True)`): the diagnosis's module
  and tables join the heap before the loop;
- ballast: the loop alone, after making as many tracked objects as gcbench's import and
  `measure` added to the heap (the gcbench run's heap less the bare run's): what the
  footprint alone does to the schedule, so that gcbench against it shows what its steps,
  hooks, entry and exit do (nothing, where the counts are equal).

Every mode counts collections with the same hook, so the columns compare like with like.
Prints, per mode, the tracked heap before the loop, the modules loaded, and the young,
middle and full collections; the full collections of the oldest generation wait until
the objects promoted since the last one exceed a quarter of it, so a larger heap before
the loop (gcbench's own objects) makes them rarer.

    python benchmarks/schedule_footprint.py [--steps 2000] [--keep 10] [--cyclic 0] [--runs 3] [--save FILE]
    python benchmarks/schedule_footprint.py --family 40 [--save FILE]   # loops drawn at random (explained too)
    python benchmarks/schedule_footprint.py --ballast-curve 40 [--save FILE]   # any probe's objects

ballast: the bare loop after as many objects as gcbench's footprint.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

SCRIPT = r"""
import gc, sys, time
mode, steps, keep, cyclic, ballast, collect = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), \
    int(sys.argv[5]), sys.argv[6] == "1"
counts = [0, 0, 0]
done = [False]  # the loop's last step ran: what follows (gcbench's exit, its own readings) is not the loop's

def count(phase, info):
    if phase == "stop" and not done[0]:
        counts[info["generation"]] += 1

if mode == "minimal":
    import array
    starts, stops, gens = array.array("q", bytes(8 * 100_000)), array.array("q", bytes(8 * 100_000)), \
        array.array("b", bytes(100_000))
    at = [0]
    def probe(phase, info):
        i = at[0]
        if i < 100_000:
            if phase == "start":
                starts[i] = time.perf_counter_ns()
            else:
                stops[i] = time.perf_counter_ns()
                gens[i] = info["generation"]
                at[0] = i + 1
    step_times = array.array("q", bytes(8 * (steps + 1)))
if mode in ("gcbench", "explain"):
    import gcbench
    # what it imports and makes before the loop: the loop's starting heap
    m = gcbench.measure("footprint", explain=mode == "explain")
if ballast:
    made = [[] for _ in range(ballast - 1)]  # ballast tracked objects, the list holding them included
if collect:  # a script that collected before its loop: the 25 % rule counts from the heap as it is now
    gc.collect()
heap, modules = len(gc.get_objects()), len(sys.modules)
kept = []
gc.callbacks.append(count)

def body():
    kept.append([[j] for j in range(keep)])  # lists: tracked, as a promoting loop's objects are
    for _ in range(cyclic):
        c = []
        c.append(c)

if mode in ("gcbench", "explain"):
    with m:
        for _ in range(steps):
            with m.step():
                body()
        done[0] = True
elif mode == "minimal":
    gc.callbacks.append(probe)
    for s in range(steps):
        t = time.perf_counter_ns()
        body()
        step_times[s] = time.perf_counter_ns() - t
    gc.callbacks.remove(probe)
else:
    for _ in range(steps):
        body()
done[0] = True
gc.callbacks.remove(count)
import json  # after the loop: json brings re, enum and functools, which a plain 3.12 has not loaded

print(json.dumps({"heap": heap, "modules": modules, "collections": counts}))
"""


_COMPILED: list[bool] = []


def compiled() -> None:
    """gcbench's modules as bytecode, once, as an installed package has them: a module
    compiled from source at import (an edited checkout under PYTHONDONTWRITEBYTECODE) makes
    the interpreter's AST types, 600 objects in the heap measured, which no user's
    installed gcbench makes. All of them, whatever their timestamps say: a file edited twice
    in one second to the same size keeps the first edit's bytecode (a probe that listed
    nothing was measured that way once)."""
    if not _COMPILED:
        import compileall
        import pathlib

        import gcbench

        compileall.compile_dir(str(pathlib.Path(gcbench.__file__).parent), quiet=2, force=True)
        _COMPILED.append(True)


def run(mode: str, steps: int, keep: int, cyclic: int, ballast: int = 0, collect: bool = True) -> dict:
    """One fresh process of `mode` ("bare", "minimal", "gcbench"; "bare" with `ballast`
    tracked objects made before the loop): its heap, modules and collections. `collect`:
    the script calls gc.collect() before its loop (else its first full collection comes
    when the collector's own rule first allows it, and sets the count the rule reads)."""
    compiled()
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode, str(steps), str(keep), str(cyclic),
                          str(ballast), "1" if collect else "0"],
                         capture_output=True, text=True, check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


FAMILY_MODES = ("bare", "minimal", "gcbench", "explain")


def family(loops: int, steps: int, seed: int = 7, modes: tuple[str, ...] = FAMILY_MODES) -> dict:
    """`loops` loops drawn at random (`seed`): 5, 10 or 20 objects kept a step, 200 to 1,400
    of cyclic garbage, and a gc.collect() before the loop or none; each in each of `modes`
    (bare, under the minimal probe, under gcbench, explained: the diagnosis's module and
    tables before the loop too), a fresh process each. How many have the same collections
    of every generation, and the same full collections (the footprint moves the oldest
    generation's 25 % rule wherever a loop's full collection sits within a quarter of it of
    the rule's threshold: a loop whose counts differ is one of those)."""
    rows = []
    for keep, cyclic, collect in drawn(loops, seed):
        got = {mode: run(mode, steps, keep, cyclic, collect=collect)["collections"] for mode in modes}
        rows.append({"keep": keep, "cyclic": cyclic, "collect": collect, **got})
    return {"steps": steps, "seed": seed, "loops": rows,
            "same": sum(r["minimal"] == r["gcbench"] for r in rows),
            "same_full": sum(r["minimal"][2] == r["gcbench"][2] for r in rows),
            # against the bare loop, as the ballast curve (`ballast_curve`) counts
            "bare_minimal": sum(r["bare"] == r["minimal"] for r in rows),
            "bare_gcbench": sum(r["bare"] == r["gcbench"] for r in rows),
            "bare_gcbench_full": sum(r["bare"][2] == r["gcbench"][2] for r in rows),
            **({"bare_explain": sum(r["bare"] == r["explain"] for r in rows),
                "bare_explain_full": sum(r["bare"][2] == r["explain"][2] for r in rows)} if "explain" in modes else {})}


def drawn(loops: int, seed: int) -> list[tuple[int, int, bool]]:
    """`loops` loops drawn at random: (objects kept a step, cyclic objects a step, a
    gc.collect() before the loop)."""
    import random

    rng = random.Random(seed)  # noqa: S311 - loops drawn, not a secret
    return [(rng.choice((5, 10, 20)), rng.randrange(200, 1400, 10), rng.random() < 0.5) for _ in range(loops)]


BALLAST = (25, 50, 100, 200, 400)  # tracked objects made before the bare loop (`ballast_curve`)


def ballast_curve(loops: int, steps: int, seed: int = 7) -> dict:
    """What any probe's objects before the loop do, whoever made them: the loops drawn at
    random (`drawn`) bare, and the same bare loops after each number of objects of ballast
    in `BALLAST`; per number, how many keep the bare loop's collections of every generation,
    and its full ones. The minimal probe (about 90 objects) and gcbench's footprint (about
    400) sit on this curve: no footprint above a few dozen objects leaves every loop's
    schedule as it was."""
    rows = []
    for keep, cyclic, collect in drawn(loops, seed):
        bare = run("bare", steps, keep, cyclic, collect=collect)["collections"]
        rows.append({"keep": keep, "cyclic": cyclic, "collect": collect, "bare": bare,
                     **{str(b): run("bare", steps, keep, cyclic, b, collect)["collections"] for b in BALLAST}})
    return {"steps": steps, "seed": seed, "loops": rows,
            "same": {str(b): sum(r[str(b)] == r["bare"] for r in rows) for b in BALLAST},
            "same_full": {str(b): sum(r[str(b)][2] == r["bare"][2] for r in rows) for b in BALLAST}}


def print_family(got: dict) -> None:
    loops = got["loops"]
    print(f"{len(loops)} loops of {got['steps']:,} steps drawn at random (seed {got['seed']}): kept 5-20 objects "
          "a step, 200-1,400 of cyclic garbage, a gc.collect() before or none")
    print(f"the same collections of every generation under gcbench as under the minimal probe: {got['same']} of "
          f"{len(loops)}; the same full collections: {got['same_full']} of {len(loops)}")
    print(f"the bare loop's collections of every generation: under the minimal probe in {got['bare_minimal']}, under "
          f"gcbench in {got['bare_gcbench']} of {len(loops)}, explained in {got['bare_explain']}; its full collections "
          f"under gcbench in {got['bare_gcbench_full']}, explained in {got['bare_explain_full']}")
    for r in loops:
        if r["minimal"] != r["gcbench"]:
            print(f"  kept {r['keep']}, cyclic {r['cyclic']}, {'collected' if r['collect'] else 'not collected'} "
                  f"before: minimal {' / '.join(map(str, r['minimal']))}, gcbench {' / '.join(map(str, r['gcbench']))}")


def save(path: str | None, got: dict) -> None:
    """Write `got` to `path` (where one was given) as the committed runs are."""
    if path:
        with open(path, "w") as f:
            json.dump(got, f, indent=1)
            f.write("\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--keep", type=int, default=10, help="objects kept a step")
    ap.add_argument("--cyclic", type=int, default=0, help="objects of cyclic garbage a step")
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per mode")
    ap.add_argument("--json", action="store_true", help="print the runs as JSON")
    ap.add_argument("--save", metavar="FILE", help="also write the runs to FILE")
    ap.add_argument("--family", type=int, metavar="N",
                    help="instead: N loops drawn at random, bare, under the minimal probe, under gcbench and explained")
    ap.add_argument("--ballast-curve", type=int, metavar="N",
                    help="instead: N loops drawn at random, bare against the bare loop after "
                         f"{', '.join(map(str, BALLAST))} objects of ballast")
    args = ap.parse_args()
    if args.ballast_curve:
        curve = ballast_curve(args.ballast_curve, args.steps)
        save(args.save, curve)
        n = len(curve["loops"])
        print(f"{n} loops of {curve['steps']:,} steps drawn at random (seed {curve['seed']}), bare against the "
              "bare loop after objects of ballast made before it:")
        for b in BALLAST:
            print(f"  {b:>4} objects: every generation's collections as bare in {curve['same'][str(b)]} of {n}, "
                  f"the full ones in {curve['same_full'][str(b)]}")
        return 0
    if args.family:
        got = family(args.family, args.steps)
        save(args.save, got)
        print(json.dumps(got)) if args.json else print_family(got)
        return 0
    rows = {mode: [run(mode, args.steps, args.keep, args.cyclic) for _ in range(args.runs)]
            for mode in ("bare", "minimal", "gcbench", "explain")}
    footprint = rows["gcbench"][0]["heap"] - rows["bare"][0]["heap"]
    rows["ballast"] = [run("bare", args.steps, args.keep, args.cyclic, footprint) for _ in range(args.runs)]
    save(args.save, {"steps": args.steps, "keep": args.keep, "cyclic": args.cyclic, **rows})
    if args.json:
        print(json.dumps(rows))
        return 0
    print(f"{args.steps:,} steps, {args.keep} objects kept and {args.cyclic} of cyclic garbage a step; "
          f"{args.runs} fresh processes a mode")
    print(f"{'mode':<8} {'heap before':>12} {'modules':>8}  collections (young / middle / full), each run")
    for mode, runs in rows.items():
        counts = "   ".join(" / ".join(f"{c:,}" for c in r["collections"]) for r in runs)
        print(f"{mode:<8} {runs[0]['heap']:>12,} {runs[0]['modules']:>8}  {counts}")
    same = all(r["collections"] == rows["minimal"][0]["collections"] for r in rows["gcbench"])
    print("gcbench leaves the schedule as the minimal probe does" if same else
          "gcbench moves the schedule: its collections differ from the minimal probe's")
    bare = rows["bare"][0]["collections"]
    got = {tuple(r["collections"]) for r in rows["gcbench"]}
    if got == {tuple(bare)}:
        said = "the bare loop's collections"
    elif got == {tuple(rows["ballast"][0]["collections"])}:
        said = "the collections of the bare loop after as much ballast: only the footprint moves the schedule"
    else:
        said = "neither the bare loop's collections nor the ballast's: its steps, hooks, entry or exit move them"
    print(f"its footprint: {footprint:,} objects before the loop; under gcbench, {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
