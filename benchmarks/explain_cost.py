"""What does an explanation cost? The wall time of examples/equinox_flatten.py (a deep
Equinox module flattened twice per step) timed, and under `explain=True`, in fresh
processes, with where the diagnosis spent its time: its collector hooks (the pauses it
adds) and the allocation sites of what was promoted or collected.

    python benchmarks/explain_cost.py [--steps 50] [--repeats 2]

Each run compiles the step first (about 10 s on a 2-core CPU), so the difference between
the two lines is what the diagnosis adds.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "equinox_flatten.py"

# Runs the example with the diagnosis' two costly parts timed from outside (the same
# functions, wrapped): the hooks in gc.callbacks, and the site lookups inside them.
PROBE = """
import collections, json, runpy, sys, time
from gcbench.measuring import diagnose
spent = collections.Counter()
def timed(owner, name, key):
    inner = getattr(owner, name, None)
    if inner is None:  # a gcbench from before sites_of: its lookups are inside the hooks' time
        return
    def wrapper(*args):
        t = time.perf_counter()
        try:
            return inner(*args)
        finally:
            spent[key] += time.perf_counter() - t
    setattr(owner, name, wrapper)
timed(diagnose.Diagnosis, "_on", "hooks")
timed(diagnose, "sites_of", "sites")
sys.argv = sys.argv[1:]  # the example and its arguments
runpy.run_path(sys.argv[0], run_name="__main__")
print(json.dumps(spent))
"""


def run(args: list[str], probe: bool) -> tuple[float, dict]:
    start = time.perf_counter()
    command = [sys.executable, "-c", PROBE, str(EXAMPLE), *args] if probe else [sys.executable, str(EXAMPLE), *args]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - start
    return wall, json.loads(out.strip().splitlines()[-1]) if probe else {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=2, help="fresh processes per line")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        common = ["--variant", "twice", "--steps", str(args.steps)]
        print(f"examples/equinox_flatten.py --variant twice --steps {args.steps}, {args.repeats} processes each")
        print(f"{'run':<10} {'wall s':>16}  {'hooks s':>14}  {'site lookups s':>14}")
        for name, extra in (("timed", []), ("explained", ["--explain"])):
            walls, hooks, sites = [], [], []
            for r in range(args.repeats):
                wall, spent = run([*common, "--out", f"{tmp}/{name}{r}", *extra], probe=bool(extra))
                walls.append(wall)
                hooks.append(spent.get("hooks"))
                sites.append(spent.get("sites"))
            def show(values):
                return ", ".join("-" if v is None else f"{v:.1f}" for v in values)
            print(f"{name:<10} {show(walls):>16}  {show(hooks) if extra else '-':>14}  "
                  f"{show(sites) if extra else '-':>14}")


if __name__ == "__main__":
    main()
