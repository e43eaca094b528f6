"""Each Python backend's median step time as a ratio to `jax-vmap`, in one run.

Every cell runs in --repeats worker processes through gcbench's runner (default N per
workload unless --networks), GC policy `default`; the table shows the median step (the
median of the per-repeat medians), its ratio to jax-vmap on the same workload with the
95 % interval of the ratio (repeats as the unit, see `gcbench.analysing.comparison`), and the GC share.

    python benchmarks/backend_ratios.py [--steps 100] [--repeats 3] [--workloads mlp,lenet5] [--out DIR]
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile

from gcbench.analysing import comparison, summary
from gcbench.measuring.backends import BACKENDS
from gcbench.running.config import Suite, split_list
from gcbench.running.runner import run_cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workloads", default="mlp,lenet5")
    ap.add_argument("--networks", type=int)
    ap.add_argument("--out", help="keep the results here (default: a temporary folder)")
    args = ap.parse_args()

    workloads = split_list(args.workloads)
    backends = [b.name for b in BACKENDS.values() if b.language == "python"]
    suite = Suite(backends=backends, workloads=workloads, steps=args.steps, warmup=args.warmup, repeats=args.repeats,
                  networks=dict.fromkeys(workloads, args.networks) if args.networks else {}).validate()
    out = pathlib.Path(args.out or tempfile.mkdtemp(prefix="gcbench-ratios-"))
    out.mkdir(parents=True, exist_ok=True)
    docs = run_cells(suite.cells(), out, ["benchmarks/backend_ratios.py"], suite.timeout)

    cells = {cs.key[:2]: cs for cs in summary.summarize_all(docs) if cs.ok}
    print(f"\nmedian step time as a ratio to jax-vmap ({args.steps} timed steps x {args.repeats} repeats per cell; "
          f"results in {out})")
    head = f"{'backend':<18}" + "".join(f"{w + ' ms':>12}{'x vmap (95 % CI)':>22}{'GC %':>7}" for w in workloads)
    print(head + "\n" + "-" * len(head))
    for b in backends:
        row = f"{b:<18}"
        for w in workloads:
            cs, floor = cells.get((b, w)), cells.get(("jax-vmap", w))
            if cs is None:
                row += f"{'-':>12}{'-':>22}{'-':>7}"
                continue
            ratio = "-"
            if floor is not None:
                t = comparison.test_median(comparison.repeat_values(floor.docs), comparison.repeat_values(cs.docs),
                                           0.05, 0.05)
                ratio = f"{t.effect:.2f}" + (f" ({t.ci[0]:.2f}-{t.ci[1]:.2f})" if t.ci else "")
            row += f"{cs.stats.median_ms:>12.2f}{ratio:>22}{100 * cs.stats.gc_share:>7.2f}"
        print(row)


if __name__ == "__main__":
    main()
