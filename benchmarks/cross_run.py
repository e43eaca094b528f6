"""Two runs apart: how far the level of a run moves, and what compare calls across runs.

1. From the committed raw results: every cell measured with the same settings in two
   separate runs (different invocations, in different report folders). Per cell, the log
   ratio of the runs' geometric-mean medians, less what the repeats' own spread explains,
   gives the variance of a run's level; printed with the shift shared by all the cells.
2. By simulation, at the spread between repeats measured here and a run-level shift of
   the estimated size: the share of identical cells compare calls faster or slower when
   they come from two runs, with and without the run-level term in the interval
   (`compare.RUN_SD`), and when both sides are in one run (no shift).

    python benchmarks/cross_run.py [--pairs 2000]
"""

from __future__ import annotations

import argparse
import collections
import math
import pathlib
import sys

import numpy as np

from gcbench.publishing import archive
from gcbench.analysing import compare, summary
from gcbench.measuring import results

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def runs_of_the_same_cells() -> dict:
    """cell settings -> {(report, run id): [per-repeat median ms]}, for cells in 2+ runs."""
    groups: dict = collections.defaultdict(lambda: collections.defaultdict(list))
    for rep in sorted((ROOT / "reports").iterdir()):
        if not (rep / archive.NAME).is_file():
            continue
        with archive.opened(rep) as folder:
            for d in results.load_dir(folder, allow_empty=True):
                if d["status"] != "ok":
                    continue
                key = summary.cell_key(d) + (len(d["wall_ns"]), results.batch_size(d), d["networks"],
                                             d["data"].get("kind"), summary.node_type(d))
                groups[key][(rep.name, results.run_id(d) or "")].append(float(np.median(d["wall_ns"])) / 1e6)
    return {k: v for k, v in groups.items() if len(v) > 1}


def estimate(groups: dict) -> dict:
    diffs, sampling = [], []
    for runs in groups.values():
        (ka, a), (kb, b) = list(runs.items())[:2]
        la, lb = np.log(a), np.log(b)
        diffs.append(float(lb.mean() - la.mean()))
        pooled = (((la - la.mean()) ** 2).sum() + ((lb - lb.mean()) ** 2).sum()) / (len(la) + len(lb) - 2)
        sampling.append(pooled * (1 / len(la) + 1 / len(lb)))
    d, v = np.asarray(diffs), np.asarray(sampling)
    run_var = max(float(np.mean(d ** 2) - np.mean(v)) / 2, 0.0)
    return {"cells": len(d), "shift": float(d.mean()), "diff_sd": float(d.std(ddof=1)),
            "sampling_sd": float(np.sqrt(v.mean())), "run_sd": math.sqrt(run_var),
            "spread": float(np.sqrt(np.mean(v) / (2 / 3)))}


def false_calls(rng, pairs: int, run_sd: float, widen: bool, repeats: int = 3) -> float:
    from simulate import SHIFT_SD
    from test_inference import repeat_log_medians

    wrong = 0
    for _ in range(pairs):
        a = repeat_log_medians(rng, 1, repeats)[0] + rng.normal(0, run_sd)
        b = repeat_log_medians(rng, 1, repeats)[0] + rng.normal(0, run_sd)
        va, vb = {"medians": np.exp(a).tolist(), "apart": widen}, {"medians": np.exp(b).tolist(), "apart": widen}
        t = compare.test_median(va, vb, compare.MIN_EFFECT, compare.ALPHA)
        compare.conclude([t], compare.ALPHA)
        wrong += t.verdict in ("faster", "slower")
    return wrong / pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=2000)
    args = ap.parse_args()
    groups = runs_of_the_same_cells()
    e = estimate(groups)
    print(f"{e['cells']} cells measured in two separate runs (committed raw results)")
    print(f"shared shift between the runs: {100 * (math.exp(e['shift']) - 1):+.1f} %; per-cell difference of the runs: "
          f"sd {100 * e['diff_sd']:.1f} % (the repeats' own spread explains {100 * e['sampling_sd']:.1f} %)")
    print(f"a run's own level: sd {100 * e['run_sd']:.1f} % (compare.RUN_SD = {100 * compare.RUN_SD:.0f} %)")
    rng = np.random.default_rng(5)
    for run_sd in (0.0, compare.RUN_SD, 0.07):
        plain = false_calls(rng, args.pairs, run_sd, False)
        widened = false_calls(rng, args.pairs, run_sd, True)
        print(f"identical cells, run-level sd {100 * run_sd:.0f} %, 3 repeats a side: false calls {100 * plain:.1f} % "
              f"as within one run, {100 * widened:.1f} % with the run-level term")


if __name__ == "__main__":
    main()
