"""Every interval covers on each side: 2.5 % of the truth above it and 2.5 % below, each
within a stated tolerance, under the verdict's own model (log medians of repeats, normal,
with each run's own level where the sides are two runs apart). The check is shown to fail
for the two mutations a total-coverage check lets through: an interval shifted by 0.3
standard errors, and one that misses mostly on one side at the same total coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sst

from gcbench.analysing import compare, stats

N = 20_000  # intervals per check: a tail's Monte Carlo standard error is 0.11 points
TOLERANCE = 0.005  # each tail 2.5 % +- 0.5 points (4.5 standard errors: a true interval passes)
SPREAD = 0.10  # between repeats, as measured here (log scale)


def tails(lo: np.ndarray, hi: np.ndarray, truth: float) -> tuple[float, float]:
    """The share of intervals wholly below the truth, and wholly above it."""
    return float(np.mean(hi < truth)), float(np.mean(lo > truth))


def covers_on_each_side(lo, hi, truth: float = 1.0) -> bool:
    return all(abs(t - 0.025) <= TOLERANCE for t in tails(np.asarray(lo), np.asarray(hi), truth))


def compare_intervals(seed: int, repeats: int, apart: bool) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """compare's own interval of the median ratio for N identical pairs of cells (truth 1),
    and the two mutations of it, built from the same test's estimate and standard error."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0, SPREAD, (N, repeats))
    b = rng.normal(0, SPREAD, (N, repeats))
    if apart:  # each run's own level, of the size compare assumes
        a += rng.normal(0, compare.RUN_SD, (N, 1))
        b += rng.normal(0, compare.RUN_SD, (N, 1))
    out = {k: (np.empty(N), np.empty(N)) for k in ("compare", "shifted 0.3 se", "one-sided")}
    for i in range(N):
        t = compare.test_median({"medians": np.exp(a[i]).tolist(), "apart": apart},
                                {"medians": np.exp(b[i]).tolist(), "apart": apart}, compare.MIN_EFFECT, compare.ALPHA)
        q = float(sst.t.ppf(0.975, t.df))
        out["compare"][0][i], out["compare"][1][i] = t.ci
        out["shifted 0.3 se"][0][i] = math.exp(t.estimate - (q - 0.3) * t.se)
        out["shifted 0.3 se"][1][i] = math.exp(t.estimate + (q + 0.3) * t.se)
        # 1 % missed below, 4 % above: 95 % in total, as the honest one
        out["one-sided"][0][i] = math.exp(t.estimate - float(sst.t.ppf(0.99, t.df)) * t.se)
        out["one-sided"][1][i] = math.exp(t.estimate + float(sst.t.ppf(0.96, t.df)) * t.se)
    return out


@pytest.mark.parametrize("repeats, apart", [(3, False), (5, False), (3, True)])
def test_compares_interval_covers_on_each_side_and_its_mutations_fail(repeats, apart):
    got = compare_intervals(10 + repeats + 100 * apart, repeats, apart)
    lo, hi = got["compare"]
    assert covers_on_each_side(lo, hi), tails(lo, hi, 1.0)
    assert 0.94 <= np.mean((lo <= 1) & (hi >= 1)) <= 0.96
    for mutation in ("shifted 0.3 se", "one-sided"):
        mlo, mhi = got[mutation]
        assert 0.93 <= np.mean((mlo <= 1) & (mhi >= 1)) <= 0.97  # a total-coverage check passes it ...
        assert not covers_on_each_side(mlo, mhi), (mutation, tails(mlo, mhi, 1.0))  # ... this one does not


@pytest.mark.parametrize("repeats", [3, 5])
def test_a_cells_interval_covers_on_each_side(repeats):
    """stats.geometric: the interval of one cell's typical step (geometric mean of its
    repeats' medians), per side."""
    rng = np.random.default_rng(300 + repeats)
    logs = rng.normal(0, SPREAD, (N, repeats))
    ci = np.array([stats.geometric(np.exp(row).tolist())["ci"] for row in logs])
    assert covers_on_each_side(ci[:, 0], ci[:, 1]), tails(ci[:, 0], ci[:, 1], 1.0)


def test_the_run_terms_interval_covers_on_each_side():
    """stats.run_term from 6 runs of 2 cells, 4 repeats each, a shared run shift of 5 % and
    12 % between repeats (what benchmarks/run_term.py measured): conservative by design
    (runs - 1 degrees of freedom), so each tail is at most 2.5 % plus Monte Carlo error."""
    rng = np.random.default_rng(7)
    sims, true = 3000, 0.05
    below = above = 0
    for _ in range(sims):
        shift = rng.normal(0, true, 6)
        cells = [[list(rng.normal(0, 0.12, 4) + shift[r] + c) for r in range(6)] for c in range(2)]
        est = stats.run_term(cells)
        below += est["high"] < true
        above += est["low"] > true
    bound = 0.025 + 2.5 * math.sqrt(0.025 * 0.975 / sims)
    assert below / sims <= bound and above / sims <= bound, (below / sims, above / sims)
