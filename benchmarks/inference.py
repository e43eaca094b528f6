"""The figures README quotes for gcbench's inference, by simulation at the noise measured
on this machine (tests/simulate.py; benchmarks/noise.py measures it on the committed raw
results): coverage of the cell intervals, false calls of identical cells, power and the
smallest detectable change, and false flags of the drift check.

    python benchmarks/inference.py [--pairs 4000]
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from gcbench.analysing import comparison, stats
from simulate import PHI, SHIFT_SD, STEP_SD, ar1

STEPS = 150


def log_medians(rng, cells, repeats, shift=0.0):
    x = ar1(rng, STEPS, PHI, STEP_SD, size=cells * repeats)
    return np.median(x, axis=1).reshape(cells, repeats) + rng.normal(0, SHIFT_SD, (cells, repeats)) + shift


def calls(rng, effect, pairs, repeats):
    a, b = log_medians(rng, pairs, repeats), log_medians(rng, pairs, repeats, math.log(effect))
    out = {}
    for x, y in zip(a, b, strict=True):
        t = comparison.test_median(comparison.RepeatValues(medians=list(np.exp(x))),
                                   comparison.RepeatValues(medians=list(np.exp(y))), comparison.MIN_EFFECT,
                                   comparison.ALPHA)
        comparison.conclude([t], comparison.ALPHA)
        out[t.verdict] = out.get(t.verdict, 0) + 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=4000)
    n = ap.parse_args().pairs
    rng = np.random.default_rng(2026)
    print(f"noise: lag-1 {PHI}, step-to-step {100 * STEP_SD:g} %, between processes {100 * SHIFT_SD:g} %, "
          f"{STEPS} steps per repeat; {n} simulated cells or pairs per figure")
    for r in (3, 5, 8):  # no interval from fewer than 3 repeats
        cov = np.mean(
            [lo <= 1 <= hi for lo, hi in (stats.geometric(np.exp(row)).ci for row in log_medians(rng, n, r))]
        )
        print(f"R = {r}: the 95 % interval of the median covers {100 * cov:.1f} %")
    spread = float(np.std(log_medians(rng, n, 3), ddof=1))
    for r in (3, 5, 8):
        aa = calls(rng, 1.0, n, r)
        wrong = aa.get("faster", 0) + aa.get("slower", 0)
        p20, p10 = (calls(rng, e, n, r).get("slower", 0) / n for e in (1.2, 1.1))
        mde = stats.detectable_change(spread, r, r, comparison.ALPHA)
        print(
            f"R = {r}: identical pairs called different {100 * wrong / n:.1f} %, "
            f"'same' {100 * aa.get('same', 0) / n:.1f} %; "
            f"a 20 % slowdown found {100 * p20:.0f} %, 10 % {100 * p10:.0f} %; detectable with 80 % power: "
            f"{100 * mde:.0f} %"
        )
    for phi, sd in ((0.65, 0.10), (0.85, 0.10), (0.85, 0.14)):
        flags = np.mean([stats.drift(np.exp(s)) is not None for s in ar1(rng, STEPS, phi, sd, size=n)])
        print(f"drift flag on drift-free series (lag-1 {phi}, spread {100 * sd:g} %): {100 * flags:.2f} % flagged")
    for shift in (0.2, 0.3):
        x = ar1(rng, STEPS, 0.3, 0.10, size=n // 4)
        x[:, STEPS // 2:] += math.log1p(shift)
        found = np.mean([stats.drift(np.exp(s)) is not None for s in x])
        print(f"drift flag on a {100 * shift:.0f} % level change halfway (lag-1 0.3): {100 * found:.0f} % flagged")


if __name__ == "__main__":
    main()
