"""The gate's catalogue: regressions users fear and loops that only start from another heap.

Pure-Python loops under `gcbench.measure`, each side in fresh processes (repeats), compared
as a CI job would (`compare --fail-on` with every count gate). A loop makes cyclic garbage
a step (what drives its young collections), may keep objects for a while (promoted, then
freed: what drives its full collections), may keep some for good (a leak), and starts from
a heap of K extra long-lived objects allocated before anything is imported.

- **The catalogue**: a full collection every 100 steps becoming every 74 and every 80 (more
  promotions), retention of 1 in 20 to 1 in 1,000 of a step's cyclic objects, pressure +1
  to +10 %, leaks of 0.5 and 2 objects a step; each with the verdicts it must get.
- **Starting heaps**: `--pairs` pairs of one loop (periodic and flat) whose sides start
  from heaps 1,000 and 100,000 objects apart, every other pair having loaded `_ctypes` (its
  bytes kept then read from the allocator, else from the resident set); the gate must
  never fire.
- **Resolutions**: over those pairs, how far each gated rate moved between the sides (the
  resolution compare's margins must exceed) and the full collections' period against the
  oldest generation's size.

    python benchmarks/gate_catalogue.py [--repeats 3] [--pairs 10] [--steps 300] [--jobs 2]
                                        [--only catalogue|heaps] [--keep DIR] [--json FILE] [--smoke]

`--smoke` runs one case and one pair of each kind at 2 pairs (the e2e tier's size); exit 1
when a case gets a verdict it must not, or a starting heap fires the gate.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve()

# The two loops every case starts from (benchmarks/gate_catalogue.py --only heaps measures
# them), each holding the objects of a program's model and data (`held`: 17,000 long-lived
# objects, what gcbench's own imports once added, so that the oldest generation's 25 % rule
# decides the full collections' period): `periodic` promotes 86 objects a step and makes a
# full collection every 100 steps; `flat` promotes nothing it keeps and makes none.
PERIODIC = {"cyclic": 1400, "window": 86, "held": 17000}
FLAT = {"cyclic": 1400, "held": 17000}


@dataclasses.dataclass(frozen=True)
class Case:
    key: str  # what --cases names it by
    name: str
    base: dict
    head: dict
    fails: tuple[str, ...]  # the fail-on names that must fire (empty: the gate must pass)
    steps: int | None = None  # timed steps a side, where not the run's


CASES = (
    Case("period-60", "full every 100 -> 74 steps (more promotions)", PERIODIC, {**PERIODIC, "window": 142},
         ("more-full-gc",)),
    Case("period-75", "full every 100 -> 80 steps (more promotions)", PERIODIC, {**PERIODIC, "window": 114},
         ("more-full-gc",)),
    Case("retain-20", "retention 1 in 20 (flat)", FLAT, {**FLAT, "retain": 20}, ("more-retained",)),
    Case("retain-33", "retention 1 in 33 (flat: full 1 -> 2)", FLAT, {**FLAT, "retain": 33},
         ("more-retained",)),
    Case("retain-1000-flat", "retention 1 in 1,000 (flat)", FLAT, {**FLAT, "retain": 1000},
         ("more-retained",)),
    Case("retain-1000-periodic", "retention 1 in 1,000 (periodic)", PERIODIC, {**PERIODIC, "retain": 1000},
         ("more-retained",)),
    Case("pressure-1", "pressure +1 %", FLAT, {**FLAT, "cyclic": 1414}, ("more-allocations",)),
    Case("pressure-3", "pressure +3 %", FLAT, {**FLAT, "cyclic": 1442}, ("more-allocations",)),
    Case("pressure-10", "pressure +10 %", FLAT, {**FLAT, "cyclic": 1540}, ("more-allocations",)),
    Case("leak-2-flat", "leak 2 objects a step (flat)", FLAT, {**FLAT, "leak": 2.0}, ("more-retained",)),
    # below the resolution of 300 steps (1 object a step): the same at 300, a leak at 1,000
    Case("leak-0.5-300", "leak 0.5 objects a step (flat, 300 steps)", FLAT, {**FLAT, "leak": 0.5}, ()),
    Case("leak-0.5-1000", "leak 0.5 objects a step (flat, 1,000 steps)", FLAT, {**FLAT, "leak": 0.5},
         ("more-retained",), 1000),
    Case("leak-2-periodic", "leak 2 objects a step (periodic)", PERIODIC, {**PERIODIC, "leak": 2.0},
         ("more-retained",)),
    # untracked bytes: no count sees them, the memory in use does. Read from the allocator
    # where the process loaded `_ctypes` (numpy and jax do), else from the resident set,
    # which shows a leak only past the allocator's free memory as the steps began (up to
    # 1.2 MiB: benchmarks/allocator_free.py)
    Case("bytes-1k", "1 KiB of bytes kept a step (untracked; the allocator read)", {**FLAT, "ctypes": 1},
         {**FLAT, "ctypes": 1, "bytes": 1024}, ("more-memory-kept",)),
    Case("bytes-16k-rss", "16 KiB of bytes kept a step (untracked; pure Python: the resident set read)", FLAT,
         {**FLAT, "bytes": 16384}, ("more-memory-kept",)),
    Case("same-periodic", "unchanged (periodic)", PERIODIC, PERIODIC, ()),
    Case("same-flat", "unchanged (flat)", FLAT, FLAT, ()),
)
SMOKE_CASES = ("period-60", "same-flat")
# what the gate must do, as issue 63 of the tracker put it, and the resident set's own case
# (tests/test_gate_catalogue.py)
DONE_WHEN = ("period-60", "retain-33", "pressure-3", "leak-2-flat", "bytes-1k", "bytes-16k-rss", "same-periodic",
             "same-flat")
HEAP_APART = (1_000, 100_000)


def child(a: argparse.Namespace) -> None:
    """One repeat, in this fresh process: the starting heap, then gcbench, then the loop."""
    keep_heap = [[] for _ in range(a.heap)]  # noqa: F841 - long-lived: alive until the process ends
    held = [[] for _ in range(a.held)]  # noqa: F841 - the program's own (a model, a dataset): alive to the end
    import collections

    if a.ctypes:  # what numpy and jax load: the memory in use is then the allocator's bytes
        import _ctypes  # noqa: F401

    import gcbench

    kept: list = []
    window: collections.deque = collections.deque()
    owed = [0.0]
    made = [0]  # cycles made so far: 1 in `retain` of them is kept

    def step() -> None:
        for _ in range(a.cyclic // 2):  # a cycle of two lists: garbage only the collector frees
            x: list = []
            y = [x]
            x.append(y)
            made[0] += 1
            if a.retain and made[0] % a.retain == 0:
                kept.append(x)
        for _ in range(a.window):  # kept for `hold` steps: promoted, then freed
            window.append([])
        while len(window) > a.window * a.hold:
            window.popleft()
        if a.bytes:  # bytes are not tracked by the collector: only resident memory sees them
            kept.append(bytes(a.bytes))
        owed[0] += a.leak
        while owed[0] >= 1:
            kept.append([])
            owed[0] -= 1

    with gcbench.measure("loop", warmup=a.warmup) as m:
        for _ in range(a.warmup + a.steps):
            with m.step():
                step()
    m.save(a.out)


def run_side(folder: pathlib.Path, params: dict, heap: int, steps: int, warmup: int = 40) -> None:
    cmd = [sys.executable, str(HERE), "--child", "--out", str(folder), "--heap", str(heap), "--steps", str(steps),
           "--warmup", str(warmup)]
    for k, v in params.items():
        cmd += [f"--{k}", str(v)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def measure_pair(root: pathlib.Path, base: dict, head: dict, heaps: tuple[int, int], repeats: int, steps: int,
                 pool: concurrent.futures.Executor) -> tuple[pathlib.Path, pathlib.Path]:
    """Both sides' repeats, interleaved: base, head, base, head, ... (each a fresh process)."""
    a, b = root / "base", root / "head"
    futures = []
    for _ in range(repeats):
        futures.append(pool.submit(run_side, a, base, heaps[0], steps))
        futures.append(pool.submit(run_side, b, head, heaps[1], steps))
    for f in futures:
        f.result()
    return a, b


def judge(a: pathlib.Path, b: pathlib.Path) -> dict:
    """compare A B --fail-on every count gate: the row's verdicts, what fired, and the rates."""
    from gcbench.analysing import comparison
    from gcbench.commands.compare import GATE, failing

    c = comparison.compare_dirs(a, b)
    row = c.rows[0]
    return {"summary": row.summary, "fired": sorted({t.verdict for _, t in failing(c, GATE)}),
            "tests": {t.metric: {"verdict": t.verdict, "a": t.a, "b": t.b} for t in row.tests},
            "rates": _rates(a) | {f"head_{k}": v for k, v in _rates(b).items()}}


def _rates(folder: pathlib.Path) -> dict:
    from gcbench.analysing import rates, summary
    from gcbench.measuring import results

    docs = results.ok(results.load_dir(folder))
    periods = [rates.full_period(d) for d in docs]
    kept = [rates.bytes_kept_reading(d) for d in docs]
    return {"pressure": [summary.pressure_per_step(d)[0] for d in docs],
            "promotions": [rates.promotions_per_step(d) for d in docs],
            "growth": [rates.growth_per_step(d) for d in docs],
            "kib_kept_per_1000": [k.per_1000 / 1024 if k else 0.0 for k in kept],
            # the steps between the two readings bytes kept come from (the gate judges over the shortest)
            "kib_kept_span": [k.span if k else 0 for k in kept],
            "kib_kept_from_allocator": [k.from_allocator if k else None for k in kept],
            "rss_kib_per_1000": [(x or 0.0) / 1024 for x in map(rates.rss_growth_per_1000, docs)],
            "period": [p.period if p else None for p in periods],
            "heap": [p.heap if p else None for p in periods],
            "full_at": [p.at if p else None for p in periods]}


def verdict_names(fired: list[str]) -> set[str]:
    """The fail-on names of the verdicts that fired."""
    from gcbench.commands.compare import FAIL_ON as NAMES

    by_verdict = {v[1]: k for k, v in NAMES.items()}
    return {by_verdict[f] for f in fired if f in by_verdict}


def catalogue(args, pool, root: pathlib.Path) -> list[dict]:
    rows = []
    wanted = SMOKE_CASES if args.smoke else args.cases.split(",") if args.cases else [c.key for c in CASES]
    unknown = set(wanted) - {c.key for c in CASES}
    if unknown:
        sys.exit(f"gate_catalogue: no case {', '.join(sorted(unknown))}; cases are {', '.join(c.key for c in CASES)}")
    cases = [c for c in CASES if c.key in wanted]
    for i, case in enumerate(cases):
        a, b = measure_pair(root / f"case{i}", case.base, case.head, (0, 0), args.repeats, case.steps or args.steps,
                            pool)
        out = judge(a, b)
        names = verdict_names(out["fired"])
        ok = set(case.fails) <= names if case.fails else not names
        rows.append({"key": case.key, "case": case.name, "must_fire": list(case.fails), "fired": sorted(names),
                     "ok": ok, "summary": out["summary"], "rates": out["rates"]})
        print(f"| {case.name} | {', '.join(case.fails) or 'nothing'} | {', '.join(sorted(names)) or 'nothing'} "
              f"(exit {1 if names else 0}) | {'ok' if ok else 'WRONG'} |", flush=True)
    return rows


def heaps(args, pool, root: pathlib.Path) -> list[dict]:
    rows = []
    for loop_name, params in (("periodic", PERIODIC), ("flat", FLAT)):
        for apart in HEAP_APART:
            for j in range(args.pairs):
                lo = 97 * j  # a different phase per pair; the larger heap on alternating sides
                pair = (lo, lo + apart) if j // 2 % 2 == 0 else (lo + apart, lo)
                # every other pair loads _ctypes: its bytes kept read from the allocator, not the resident set
                side = {**params, "ctypes": 1} if j % 2 else params
                a, b = measure_pair(root / f"{loop_name}-{apart}-{j}", side, side, pair, args.repeats,
                                    args.steps, pool)
                out = judge(a, b)
                rows.append({"loop": loop_name, "apart": apart, "heaps": pair, "fired": out["fired"],
                             "summary": out["summary"], "rates": out["rates"]})
            fired = sum(1 for r in rows if r["loop"] == loop_name and r["apart"] == apart and r["fired"])
            print(f"| {loop_name} | {apart:,} | {args.pairs} | {fired} |", flush=True)
    return rows


def spreads(rows: list[dict]) -> dict[str, float]:
    """Over the starting-heap pairs: the largest difference of each side's mean rate (how far
    a starting heap moved it), and the largest relative one for the pressure."""
    import numpy as np

    out: dict[str, float] = {}
    for key in ("pressure", "promotions", "growth", "kib_kept_per_1000", "rss_kib_per_1000"):
        diffs = []
        for r in rows:
            a, b = r["rates"][key], r["rates"][f"head_{key}"]
            if None not in a and None not in b:
                diffs.append(abs(float(np.mean(b)) - float(np.mean(a))))
        out[key] = max(diffs) if diffs else float("nan")
    # bytes kept as the gate judges them: KiB over the shortest span between a pair's
    # readings, apart for the pairs read from the allocator and from the resident set (whose
    # window is wider: comparison.RSS_KIB_PER_WINDOW)
    at_span: dict[bool, list[float]] = {True: [], False: []}
    for r in rows:
        a, b = r["rates"]["kib_kept_per_1000"], r["rates"]["head_kib_kept_per_1000"]
        span = min(r["rates"]["kib_kept_span"] + r["rates"]["head_kib_kept_span"])
        allocator = all(r["rates"]["kib_kept_from_allocator"] + r["rates"]["head_kib_kept_from_allocator"])
        at_span[allocator].append(abs(float(np.mean(b)) - float(np.mean(a))) * span / 1000)
    out["kib_kept_at_span"] = max(at_span[True]) if at_span[True] else float("nan")
    out["rss_kib_kept_at_span"] = max(at_span[False]) if at_span[False] else float("nan")
    return out


def condensed(report: dict) -> dict:
    """What benchmarks/measured/gate_catalogue.json keeps of a run (docs/statistics.md quotes
    it): the spreads, each case's verdicts, and how many starting-heap pairs fired."""
    out = {k: report[k] for k in ("steps", "repeats", "spreads") if k in report}
    out["catalogue"] = [{k: r[k] for k in ("key", "case", "must_fire", "fired", "ok")}
                        for r in report.get("catalogue", [])]
    heaps: dict[str, int] = {}
    for r in report.get("heaps", []):
        name = f"{r['loop']} {r['apart']}"
        heaps[name] = heaps.get(name, 0) + bool(r["fired"])
    out["heaps"] = heaps
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=2, help="processes at once (counts do not depend on load)")
    ap.add_argument("--only", choices=("catalogue", "heaps"))
    ap.add_argument("--cases", help="the cases to run, by key (default: all; 'done-when': issue 63's)")
    ap.add_argument("--keep", help="keep every result folder here")
    ap.add_argument("--json", help="also write every row here")
    ap.add_argument("--save", help="also write what benchmarks/measured keeps of the run here (`condensed`)")
    ap.add_argument("--smoke", action="store_true", help="two cases and two pairs of each kind")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--heap", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--warmup", type=int, default=40, help=argparse.SUPPRESS)  # the window filled: no growth left
    ap.add_argument("--cyclic", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--window", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--hold", type=int, default=30, help=argparse.SUPPRESS)
    ap.add_argument("--retain", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--held", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--leak", type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument("--bytes", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--ctypes", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    if args.smoke:
        args.pairs = min(args.pairs, 2)
    if args.cases == "done-when":
        args.cases = ",".join(DONE_WHEN)
    report: dict = {"steps": args.steps, "repeats": args.repeats}
    with tempfile.TemporaryDirectory(prefix="gcbench-catalogue-") as tmp, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        root = pathlib.Path(args.keep or tmp)
        if args.only != "heaps":
            from gcbench.commands.compare import GATE

            print(f"\nThe catalogue: {args.repeats} fresh processes a side, {args.steps} timed steps, "
                  f"--fail-on {','.join(GATE)}\n")
            print("| case | must fire | fired | |\n|---|---|---|---|")
            report["catalogue"] = catalogue(args, pool, root)
        if args.only != "catalogue":
            print(f"\nStarting heaps apart, the same loop on both sides ({args.repeats} a side): pairs that fired\n")
            print("| loop | heaps apart | pairs | fired |\n|---|---:|---:|---:|")
            report["heaps"] = heaps(args, pool, root)
            report["spreads"] = spreads(report["heaps"])
            print("\nThe largest difference a starting heap made to a side's mean rate, per step: "
                  + ", ".join(f"{k} {v:.3g}" for k, v in report["spreads"].items()))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1, default=str) + "\n")
    if args.save:
        pathlib.Path(args.save).write_text(json.dumps(condensed(report), indent=1) + "\n")
    wrong = [r for r in report.get("catalogue", []) if not r["ok"]] + \
        [r for r in report.get("heaps", []) if r["fired"]]
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
