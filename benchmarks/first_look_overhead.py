"""What does the first look (`gcbench run --quick`) spend besides the steps it measures?

Runs `gcbench run --quick` (or `--suite`) into a temporary folder, times the whole command,
and reads its results: the limit is what the run cannot do without, the timed steps and
the warm-up steps (the first of which compiles) of every repeat; the rest is the workers'
imports and model builds (`warmup.build_ns`), the runner's work and the gaps between
workers. Prints the run beside its limit as a ratio (issue 66: at most 1.15x) and where
the rest went.

    python benchmarks/first_look_overhead.py [--runs 1] [--suite quick] [--save]
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

LIMIT_RATIO = 1.15  # issue 66: the first look within 1.15x of its steps and warm-ups
SAVED = pathlib.Path(__file__).resolve().parent / "measured" / "first_look_overhead.json"


def one_run(suite: str, folder: pathlib.Path) -> dict:
    from gcbench.measuring import results

    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "gcbench", "run", "--suite", suite, "--out", str(folder), "--no-progress"],
                   check=True, capture_output=True, text=True, timeout=3600)
    total = time.monotonic() - start
    docs = results.load_dir(folder)
    steps = sum(float(sum(d.wall_ns)) for d in docs) / 1e9
    warm = sum(float(sum((d.warmup or {}).get("wall_ns") or [])) for d in docs) / 1e9
    build = sum(float((d.warmup or {}).get("build_ns") or 0) for d in docs) / 1e9
    limit = steps + warm
    return {"total_s": round(total, 2), "steps_s": round(steps, 2), "warmup_s": round(warm, 2),
            "build_s": round(build, 2), "rest_s": round(total - limit - build, 2), "repeats": len(docs),
            "ratio": round(total / limit, 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="quick")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--save", action="store_true", help=f"write {SAVED.name} into benchmarks/measured")
    a = ap.parse_args()
    runs = []
    for i in range(a.runs):
        with tempfile.TemporaryDirectory() as tmp:
            r = one_run(a.suite, pathlib.Path(tmp) / "results")
        runs.append(r)
        print(f"run {i + 1}: {r['total_s']:.1f} s for {r['repeats']} repeats; limit (steps {r['steps_s']:.1f} s + "
              f"warm-ups {r['warmup_s']:.1f} s) {r['steps_s'] + r['warmup_s']:.1f} s: {r['ratio']:.2f}x "
              f"({'within' if r['ratio'] <= LIMIT_RATIO else 'over'} {LIMIT_RATIO}x); besides them: model builds "
              f"{r['build_s']:.1f} s, imports, runner and gaps {r['rest_s']:.1f} s")
    ratio = statistics.median(r["ratio"] for r in runs)
    print(f"median {ratio:.2f}x the limit over {len(runs)} run(s)")
    if a.save:
        SAVED.write_text(json.dumps({"suite": a.suite, "limit_ratio": LIMIT_RATIO, "runs": runs}, indent=1) + "\n")
        print(f"wrote {SAVED}")
    return 0 if ratio <= LIMIT_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
