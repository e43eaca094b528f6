"""Two runs apart: how far the level of a run moves, and what compare calls across runs.

1. The run term measured in separate runs of the same cells (benchmarks/run_term.py,
   stats.run_term), with its interval; beside it, what the committed reports' pairs of
   runs show (two runs of a pair cannot resolve it).
2. By simulation, at the spread between repeats measured here and a run-level shift of
   the estimated size: the share of identical cells compare calls faster or slower when
   they come from two runs, with and without the run-level term in the interval
   (`comparison.RUN_SD`), and when both sides are in one run (no shift).

    python benchmarks/cross_run.py [--pairs 2000]
"""

from __future__ import annotations

import argparse
import collections
import math
import pathlib
import sys

import numpy as np

from gcbench.analysing import comparison, summary
from gcbench.measuring import results
from gcbench.publishing import archive

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import committed  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))


def runs_of_the_same_cells() -> dict:
    """cell settings -> {(report, run id): [per-repeat median ms]}, for cells in 2+ runs."""
    groups: dict = collections.defaultdict(lambda: collections.defaultdict(list))
    for rep in committed.reports(archive.NAME):  # the published ones, never a user's own
        with archive.opened(rep) as folder:
            for d in results.load_dir(folder, allow_empty=True):
                if d.status != "ok":
                    continue
                key = (*summary.cell_key(d), len(d.wall_ns), results.batch_size(d), d.networks,
                       d.data.get("kind"), summary.node_type(d))
                groups[key][(rep.name, results.run_id(d) or "")].append(float(np.median(d.wall_ns)) / 1e6)
    return {k: v for k, v in groups.items() if len(v) > 1}


def estimate(groups: dict) -> dict:
    diffs, sampling = [], []
    for runs in groups.values():
        (_ka, a), (_kb, b) = list(runs.items())[:2]
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
    from test_inference import repeat_log_medians

    wrong = 0
    for _ in range(pairs):
        a = repeat_log_medians(rng, 1, repeats)[0] + rng.normal(0, run_sd)
        b = repeat_log_medians(rng, 1, repeats)[0] + rng.normal(0, run_sd)
        va = comparison.RepeatValues(medians=np.exp(a).tolist(), apart=widen)
        vb = comparison.RepeatValues(medians=np.exp(b).tolist(), apart=widen)
        t = comparison.test_median(va, vb, comparison.MIN_EFFECT, comparison.ALPHA)
        comparison.conclude([t], comparison.ALPHA)
        wrong += t.verdict in ("faster", "slower")
    return wrong / pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=2000)
    args = ap.parse_args()
    import run_term

    t, _ = run_term.estimate()
    print(f"the run term from {t['runs']} separate runs of {t['cells']} cells (benchmarks/run_term.py): "
          f"{100 * t['run_sd']:.1f} % (95 % {100 * t['low']:.1f}-{100 * t['high']:.1f} %), beside "
          f"{100 * t['within_sd']:.1f} % between repeats; comparison.RUN_SD = {100 * comparison.RUN_SD:.1f} %")
    groups = runs_of_the_same_cells()
    e = estimate(groups)
    print(f"for comparison, {e['cells']} cells the committed reports hold from two runs each: per-cell difference "
          f"sd {100 * e['diff_sd']:.1f} % (the repeats' own spread explains {100 * e['sampling_sd']:.1f} %); two runs "
          "of a pair cannot resolve the term")
    rng = np.random.default_rng(5)
    for run_sd in (0.0, comparison.RUN_SD, 0.07):
        plain = false_calls(rng, args.pairs, run_sd, False)
        widened = false_calls(rng, args.pairs, run_sd, True)
        print(f"identical cells, run-level sd {100 * run_sd:.0f} %, 3 repeats a side: false calls {100 * plain:.1f} % "
              f"as within one run, {100 * widened:.1f} % with the run-level term")


if __name__ == "__main__":
    main()
