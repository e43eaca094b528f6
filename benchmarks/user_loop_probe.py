"""Does `gcbench.measure` change the collections of the loop it measures?

One loop, each step making K objects that refer to themselves (cyclic garbage that only
the collector frees, python/cpython#83242's shape), run in fresh processes twice: as is,
with collections counted by a `gc.callbacks` hook of its own, and under `with m.step():`.
Prints, for each K, the young, middle and full collections of both runs, how many of the
measured run's collections fell inside steps, and the GC share gcbench reports.

    python benchmarks/user_loop_probe.py [--steps 20000] [--k 1 3 10 100 1000]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from test_user_loop import LOOP


def run(script: pathlib.Path, mode: str, k: int, steps: int) -> dict:
    out = subprocess.run([sys.executable, str(script), mode, str(k), str(steps)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20_000, help="steps at K = 1 (fewer at larger K: the same objects)")
    ap.add_argument("--k", type=int, nargs="+", default=[1, 3, 10, 100, 1000])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = pathlib.Path(tmp, "loop.py")
        script.write_text(LOOP)
        print(f"{'K':>5} {'steps':>7}  {'as is (0/1/2)':>15}  {'measured (0/1/2)':>17}  {'in steps':>9}  {'GC %':>6}")
        for k in args.k:
            steps = max(200, args.steps // max(1, k // 10 if k > 10 else 1))
            bare = run(script, "bare", k, steps)["callbacks"]
            m = run(script, "measured", k, steps)
            total = sum(m["callbacks"])
            inside = sum(m["in_steps"])
            print(f"{k:>5} {steps:>7,}  {'/'.join(map(str, bare)):>15}  {'/'.join(map(str, m['callbacks'])):>17}  "
                  f"{100 * inside / max(total, 1):>8.1f}%  {100 * m['summary']['gc_share']:>6.2f}")


if __name__ == "__main__":
    main()
