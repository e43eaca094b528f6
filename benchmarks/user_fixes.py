"""The fixes users make, each against its bug, through the documented gate.

Five loops of the shape public threads reported, each as its author ran it (the bug) and
as the thread fixed it, under `gcbench.measure` in fresh processes (3 a side), compared
both ways with `compare --fail-on` and the documented gate (docs/usage.md): the fix must
pass it against the bug, and the bug must fail it against the fix.

- `loader`: a data loader over 200,000 long-lived records that calls gc.collect() every
  tenth item; fixed by gc.freeze() after the warm-up (each full collection then scans a
  few objects instead of the records).
- `server`: a federated client whose first server round leaves 200,000 objects behind and
  whose steps keep objects a while (full collections every 50 steps, each scanning the
  round's objects); fixed by gc.freeze() after the first round.
- `collects`: two gc.collect() calls a step; fixed by removing them.
- `islands`: islands of cyclic garbage that live a few steps, outlive the young
  collections and pile up in the oldest generation between its rare full collections;
  fixed by a gc.collect() every 50 steps (more collections for less memory: a trade).
- `workers`: forked workers that turn the collector off to keep pages shared, and so keep
  every cycle they make; fixed by freezing the heap instead and leaving the collector on
  (more collections for less memory: a trade).

    python benchmarks/user_fixes.py [--repeats 3] [--steps 300] [--patterns loader,...] [--json FILE] [--keep DIR]

Exit 1 when a fix fails the gate or a bug passes it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve()

PATTERNS = ("loader", "server", "collects", "islands", "workers")
RECORDS = 200_000


WARMUP = 20  # steps before the timed ones: the first round, the loader's first items


class Pattern:
    """One loop of a pattern, its bug or its fix: `before()` as the loop starts (the
    workers' collector), `step(i)` each step, `warmed()` after the warm-up (the fixes that
    freeze), `after()` at the end. tests/test_budget_keys.py runs the same loops under a
    budget."""

    def __init__(self, name: str, fix: bool):
        import collections

        self.name, self.fix = name, fix
        # long-lived: what a full collection scans
        self.records = [[i] for i in range(RECORDS)] if name in ("loader", "server", "islands") else []
        self.window: collections.deque = collections.deque()
        self.kept: list = []

    def before(self) -> None:
        import gc

        if self.name == "workers":
            if self.fix:
                gc.freeze()  # the parent's heap out of the collector's sight: pages stay shared, the collector on
            else:
                gc.disable()  # the bug: off, so that collections never touch the shared pages

    def warmed(self) -> None:
        import gc

        if self.fix and self.name in ("loader", "server"):
            gc.freeze()  # after the warm-up (the first round): what is there is never scanned again

    def after(self) -> None:
        import gc

        gc.enable()
        if self.name == "workers" and self.fix:
            gc.unfreeze()

    def step(self, i: int) -> None:
        import gc

        if self.name == "loader":
            cycles(200)
            if i % 10 == 0:  # the loader's own collection, every tenth item
                gc.collect()
        elif self.name == "server":
            cycles(300)
            self.window.append([[] for _ in range(1000)])  # kept 20 steps: promoted, then freed
            if len(self.window) > 20:
                self.window.popleft()
        elif self.name == "collects":
            cycles(300)
            if not self.fix:
                gc.collect()
                gc.collect()
        elif self.name == "islands":
            island: list = [[] for _ in range(200)]  # a cycle of 201 objects, alive 3 steps
            island.append(island)
            self.window.append(island)
            if len(self.window) > 3:
                self.window.popleft()
            cycles(350)
            if self.fix and i % 50 == 0:
                gc.collect()
        elif self.name == "workers":
            cycles(300)
            self.kept.append(i)


def cycles(n: int) -> None:
    """`n` cycles of two lists: garbage only the collector frees."""
    for _ in range(n):
        x: list = []
        x.append([x])


def child(a: argparse.Namespace) -> None:
    """One repeat of one pattern, its bug or its fix, in this fresh process."""
    import gcbench

    loop = Pattern(a.pattern, a.version == "fix")
    loop.before()
    with gcbench.measure(a.pattern, warmup=WARMUP) as m:
        for i in range(WARMUP + a.steps):
            if i == WARMUP:
                loop.warmed()
            with m.step():
                loop.step(i)
    loop.after()
    m.save(a.out)


def run_side(folder: pathlib.Path, pattern: str, version: str, steps: int) -> None:
    subprocess.run([sys.executable, str(HERE), "--child", "--out", str(folder), "--pattern", pattern, "--version",
                    version, "--steps", str(steps)], check=True, capture_output=True, text=True)


def judge(a: pathlib.Path, b: pathlib.Path) -> dict:
    from gcbench.analysing import comparison
    from gcbench.commands.compare import GATE, failing

    c = comparison.compare_dirs(a, b)
    return {"summary": c.rows[0].summary, "fired": sorted({t.verdict for _, t in failing(c, GATE)})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--patterns", default=",".join(PATTERNS))
    ap.add_argument("--json")
    ap.add_argument("--keep", help="keep the result folders here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--pattern", help=argparse.SUPPRESS)
    ap.add_argument("--version", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    patterns = args.patterns.split(",")
    unknown = set(patterns) - set(PATTERNS)
    if unknown:
        sys.exit(f"user_fixes: no pattern {', '.join(sorted(unknown))}; patterns are {', '.join(PATTERNS)}")
    rows = []
    from gcbench.commands.compare import GATE

    print(f"\n{args.repeats} fresh processes a side, {args.steps} timed steps, --fail-on {','.join(GATE)}\n")
    print("| pattern | fix against bug (must pass) | bug against fix (must fail) |\n|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="gcbench-fixes-") as tmp, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for pattern in patterns:
            root = pathlib.Path(args.keep or tmp, pattern)
            bug, fix = root / "bug", root / "fix"
            futures = [pool.submit(run_side, folder, pattern, folder.name, args.steps)
                       for _ in range(args.repeats) for folder in (bug, fix)]
            for f in futures:
                f.result()
            fixed, broke = judge(bug, fix), judge(fix, bug)
            ok = not fixed["fired"] and bool(broke["fired"])
            rows.append({"pattern": pattern, "fix": fixed, "bug": broke, "ok": ok})
            print(f"| {pattern} | {fixed['summary']} (exit {1 if fixed['fired'] else 0}) | {broke['summary']} "
                  f"(exit {1 if broke['fired'] else 0}: {', '.join(broke['fired']) or 'nothing'}) |", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    sys.exit(0 if all(r["ok"] for r in rows) else 1)


if __name__ == "__main__":
    main()
