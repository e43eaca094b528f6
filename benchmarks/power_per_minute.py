"""Power per minute: which design of repeats x steps detects the smallest change in its time.

Runs the same cells (vit, one GC policy, a few backends) under each design given, each
into a folder of its own, one design after the other with JAX's persistent compilation
cache shared (as `gcbench run` does), and prints per design: its wall time, the spread
between its repeats, the smallest change of a median it detects with 80 % power, and the
full collections each cell made per repeat (the designs must keep them visible).

    python benchmarks/power_per_minute.py [--designs 3x150 6x75] [--backends jax,equinox-filter,nnx]
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time

from gcbench.analysing import comparison, summary
from gcbench.measuring import results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--designs", nargs="+", default=["3x150", "6x75"], help="REPEATSxSTEPS")
    ap.add_argument("--backends", default="jax,equinox-filter,nnx")
    ap.add_argument("--workload", default="vit")
    ap.add_argument("--batch-size", default="8")
    args = ap.parse_args()
    print(f"{'design':>8} {'wall s':>7} {'spread':>7} {'detects':>8}  full collections per repeat")
    with tempfile.TemporaryDirectory() as tmp:
        for design in args.designs:
            repeats, steps = design.split("x")
            out = f"{tmp}/{design}"
            t0 = time.monotonic()
            subprocess.run([sys.executable, "-m", "gcbench", "run", "--backends", args.backends, "--workloads",
                            args.workload, "--gc", "default", "--batch-size", args.batch_size, "--repeats", repeats,
                            "--steps", steps, "--out", out, "--no-progress"], check=True, capture_output=True)
            wall = time.monotonic() - t0
            groups = summary.cells(results.load_dir(out))
            d = comparison.detectable([comparison.repeat_values(ds) for ds in groups.values()], comparison.ALPHA)
            full = "; ".join(f"{k[0]} {summary.summarize(ds).stats.full.schedule.counts}"
                             for k, ds in groups.items())
            spread, single = (d.spread, d.single or math.nan) if d else (math.nan, math.nan)
            print(f"{design:>8} {wall:>7.0f} {100 * spread:>6.1f}% {100 * single:>7.0f}%  {full}")


if __name__ == "__main__":
    main()
