"""Forked repeats against fresh interpreters: what a repeat costs besides its steps, and
whether forking changes what is measured.

Runs the same cells as `gcbench run` twice per round, once with each repeat a fresh
interpreter (`--fresh-interpreters`) and once forked from a worker server (the default),
the two alternated round by round, and prints for each way:

- the seconds a repeat takes besides its timed steps and warm-ups (the whole command's
  time less the steps and warm-ups its results hold, over its repeats);
- each cell's collections of every generation, and full collections, per repeat;
- the spread of the repeats' median step (the coefficient of variation, per cell), the
  between-repeat variance the statistics' intervals are made from.

    python benchmarks/warm_workers.py [--backends nnx,equinox-filter] [--repeats 6] [--rounds 2] [--save]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

SAVED = pathlib.Path(__file__).resolve().parent / "measured" / "warm_workers.json"
WAYS = {"fresh": ["--fresh-interpreters"], "forked": []}


def one_run(args: argparse.Namespace, way: str, folder: pathlib.Path) -> dict:
    from gcbench.measuring import results

    command = [sys.executable, "-m", "gcbench", "run", "--backends", args.backends, "--workloads", args.workload,
               "--gc", "default", "--batch-size", str(args.batch_size), "--steps", str(args.steps), "--warmup", "3",
               "--repeats", str(args.repeats), "--out", str(folder), "--no-progress", *WAYS[way]]
    start = time.monotonic()
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=3600)
    total = time.monotonic() - start
    docs = [d for d in results.load_dir(folder) if d.status == "ok"]
    measured = sum(float(sum(d.wall_ns)) + float(sum((d.warmup or {}).get("wall_ns") or [])) for d in docs) / 1e9
    cells: dict[str, dict] = {}
    for d in docs:
        c = cells.setdefault(d.backend, {"full": [], "collections": [], "median_ms": []})
        counts = np.asarray(d.gc_collections)
        c["full"].append(int(counts[:, 2].sum()))
        c["collections"].append(int(counts.sum()))
        c["median_ms"].append(round(float(np.median(d.wall_ns)) / 1e6, 3))
    for c in cells.values():
        c["cv_percent"] = round(100 * statistics.stdev(c["median_ms"]) / statistics.mean(c["median_ms"]), 2) \
            if len(c["median_ms"]) >= 2 else None
    return {"way": way, "total_s": round(total, 2), "repeats": len(docs),
            "besides_s_per_repeat": round((total - measured) / max(1, len(docs)), 3), "cells": cells}


def summary(runs: list[dict]) -> dict:
    """Per way: the median seconds a repeat takes besides its steps, every repeat's counts
    and the spreads, over the rounds."""
    out = {}
    for way in WAYS:
        mine = [r for r in runs if r["way"] == way]
        out[way] = {
            "besides_s_per_repeat": round(statistics.median(r["besides_s_per_repeat"] for r in mine), 3),
            "full": {b: [c["full"] for r in mine for bb, c in r["cells"].items() if bb == b] for b in mine[0]["cells"]},
            "collections": sorted({n for r in mine for c in r["cells"].values() for n in c["collections"]}),
            "cv_percent": sorted(c["cv_percent"] for r in mine for c in r["cells"].values()
                                 if c["cv_percent"] is not None),
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default="nnx,equinox-filter")
    ap.add_argument("--workload", default="vit")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--save", action="store_true", help=f"write {SAVED.name} into benchmarks/measured")
    a = ap.parse_args()
    if a.repeats < 3:
        ap.error("--repeats: at least 3 (a spread from fewer is not read)")
    runs = []
    for i in range(a.rounds):
        for way in (WAYS if i % 2 == 0 else reversed(WAYS)):  # alternated: neither way always runs first
            with tempfile.TemporaryDirectory() as tmp:
                r = one_run(a, way, pathlib.Path(tmp) / "results")
            runs.append(r)
            fulls = "; ".join(f"{b} {c['full']}" for b, c in r["cells"].items())
            print(f"round {i + 1}, {way}: {r['total_s']:.1f} s for {r['repeats']} repeats, "
                  f"{r['besides_s_per_repeat']:.2f} s a repeat besides its steps and warm-ups; full collections "
                  f"per repeat: {fulls}")
    s = summary(runs)
    for way, w in s.items():
        print(f"{way}: {w['besides_s_per_repeat']:.2f} s a repeat besides its steps and warm-ups (median of "
              f"{a.rounds} runs); collections per repeat {w['collections']}; spread of the repeats' median step "
              f"{w['cv_percent'][0]:.1f}-{w['cv_percent'][-1]:.1f} %")
    if a.save:
        SAVED.write_text(json.dumps({"settings": vars(a) | {"save": None}, "summary": s, "runs": runs}, indent=1)
                         + "\n")
        print(f"wrote {SAVED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
