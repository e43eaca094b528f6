"""Each Python backend's median step time as a ratio to `jax-vmap`, in one run.

Every cell runs in its own worker process through gcbench's runner (default N per
workload unless --networks), GC policy `default`; the table shows the median step,
the ratio to jax-vmap on the same workload, and the GC share.

    python benchmarks/backend_ratios.py [--steps 100] [--workloads mlp,lenet5] [--out DIR]
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile

from gcbench import stats
from gcbench.backends import BACKENDS
from gcbench.config import Suite, split_list
from gcbench.runner import run_cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--workloads", default="mlp,lenet5")
    ap.add_argument("--networks", type=int)
    ap.add_argument("--out", help="keep the results here (default: a temporary folder)")
    args = ap.parse_args()

    workloads = split_list(args.workloads)
    backends = [b.name for b in BACKENDS.values() if b.language == "python"]
    suite = Suite(backends=backends, workloads=workloads, steps=args.steps, warmup=args.warmup,
                  networks={w: args.networks for w in workloads} if args.networks else {}).validate()
    out = pathlib.Path(args.out or tempfile.mkdtemp(prefix="gcbench-ratios-"))
    out.mkdir(parents=True, exist_ok=True)
    docs = run_cells(suite.cells(), out, ["benchmarks/backend_ratios.py"], suite.timeout)

    median = {(d["backend"], d["workload"]): stats.summary(d) for d in docs if d["status"] == "ok"}
    print(f"\nmedian step time as a ratio to jax-vmap ({args.steps} timed steps per cell; results in {out})")
    head = f"{'backend':<18}" + "".join(f"{w + ' ms':>12}{'x vmap':>8}{'GC %':>7}" for w in workloads)
    print(head + "\n" + "-" * len(head))
    for b in backends:
        row = f"{b:<18}"
        for w in workloads:
            s, floor = median.get((b, w)), median.get(("jax-vmap", w))
            if s is None:
                row += f"{'-':>12}{'-':>8}{'-':>7}"
                continue
            ratio = s["median_ms"] / floor["median_ms"] if floor else float("nan")
            row += f"{s['median_ms']:>12.2f}{ratio:>8.1f}{100 * s['gc_share']:>7.2f}"
        print(row)


if __name__ == "__main__":
    main()
