"""Every interval covers on each side: 2.5 % of the truth above it and 2.5 % below, each
within a stated tolerance, under the verdict's own model (log medians of repeats, normal,
with each run's own level where the sides are two runs apart). The check is shown to fail
for the two mutations a total-coverage check lets through: an interval shifted by 0.3
standard errors, and one that misses mostly on one side at the same total coverage. Two
runs apart, the run levels are drawn from the test's own parameters (several run sds, and
what the committed measurement allows), never from compare's constants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sst

from gcbench.analysing import comparison, stats
from gcbench.analysing.comparison import RepeatValues as Values

N = 20_000  # intervals per check: a tail's Monte Carlo standard error is 0.11 points
TOLERANCE = 0.005  # each tail 2.5 % +- 0.5 points (4.5 standard errors: a true interval passes)
SPREAD = 0.10  # between repeats, as measured here (log scale)


def tails(lo: np.ndarray, hi: np.ndarray, truth: float) -> tuple[float, float]:
    """The share of intervals wholly below the truth, and wholly above it."""
    return float(np.mean(hi < truth)), float(np.mean(lo > truth))


def covers_on_each_side(lo, hi, truth: float = 1.0) -> bool:
    return all(abs(t - 0.025) <= TOLERANCE for t in tails(np.asarray(lo), np.asarray(hi), truth))


def compare_intervals(seed: int, repeats: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """compare's own interval of the median ratio for N identical pairs of cells in one run
    (truth 1), and the two mutations of it, built from the same test's estimate and
    standard error."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0, SPREAD, (N, repeats))
    b = rng.normal(0, SPREAD, (N, repeats))
    out = {k: (np.empty(N), np.empty(N)) for k in ("compare", "shifted 0.3 se", "one-sided")}
    for i in range(N):
        t = comparison.test_median(Values(medians=np.exp(a[i]).tolist()), Values(medians=np.exp(b[i]).tolist()),
                                   comparison.MIN_EFFECT, comparison.ALPHA)
        q = float(sst.t.ppf(0.975, t.df))
        out["compare"][0][i], out["compare"][1][i] = t.ci
        out["shifted 0.3 se"][0][i] = math.exp(t.estimate - (q - 0.3) * t.se)
        out["shifted 0.3 se"][1][i] = math.exp(t.estimate + (q + 0.3) * t.se)
        # 1 % missed below, 4 % above: 95 % in total, as the honest one
        out["one-sided"][0][i] = math.exp(t.estimate - float(sst.t.ppf(0.99, t.df)) * t.se)
        out["one-sided"][1][i] = math.exp(t.estimate + float(sst.t.ppf(0.96, t.df)) * t.se)
    return out


@pytest.mark.parametrize("repeats", [3, 5])
def test_compares_interval_covers_on_each_side_and_its_mutations_fail(repeats):
    got = compare_intervals(10 + repeats, repeats)
    lo, hi = got["compare"]
    assert covers_on_each_side(lo, hi), tails(lo, hi, 1.0)
    assert 0.94 <= np.mean((lo <= 1) & (hi >= 1)) <= 0.96
    for mutation in ("shifted 0.3 se", "one-sided"):
        mlo, mhi = got[mutation]
        assert 0.93 <= np.mean((mlo <= 1) & (mhi >= 1)) <= 0.97  # a total-coverage check passes it ...
        assert not covers_on_each_side(mlo, mhi), (mutation, tails(mlo, mhi, 1.0))  # ... this one does not


def two_runs_apart(seed: int, run_sd, run_term, repeats: int = 3) -> tuple[float, float]:
    """The tails of compare's interval for N identical cells two runs apart: each run's own
    level drawn at `run_sd()` (a callable: a fixed truth, or one drawn per pair), and the
    interval given `run_term(truth)` as the (sd, degrees of freedom) it carries, or None for
    compare's own (RUN_SD, RUN_DF)."""
    rng = np.random.default_rng(seed)
    lo, hi = np.empty(N), np.empty(N)
    for i in range(N):
        truth = run_sd(rng)
        a = rng.normal(0, SPREAD, repeats) + rng.normal(0, truth)
        b = rng.normal(0, SPREAD, repeats) + rng.normal(0, truth)
        t = comparison.test_median(Values(medians=np.exp(a).tolist(), apart=True),
                                   Values(medians=np.exp(b).tolist(), apart=True), comparison.MIN_EFFECT,
                                   comparison.ALPHA, run_term=run_term(rng, truth))
        lo[i], hi[i] = t.ci
    return tails(lo, hi, 1.0)


RUNS = 6  # the run term's own study: a run sd estimated from this many runs (runs - 1 degrees of freedom)


@pytest.mark.parametrize("true_sd", [0.02, 0.05, 0.10])
def test_two_runs_apart_the_interval_covers_on_each_side_at_any_run_sd(true_sd):
    """At run sds of 2, 5 and 10 %, each estimated from RUNS runs as the benchmark does (its
    square a chi-square on RUNS - 1 degrees of freedom around the truth), compare's interval
    given that estimate and its degrees of freedom covers on each side."""
    k = RUNS - 1
    below, above = two_runs_apart(int(1000 * true_sd), lambda rng: true_sd,
                                  lambda rng, truth: (truth * math.sqrt(rng.chisquare(k) / k), k))
    assert abs(below - 0.025) <= TOLERANCE, (below, above)
    assert abs(above - 0.025) <= TOLERANCE, (below, above)


def measured_run_term() -> dict:
    import json
    import pathlib

    return json.loads((pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "run_term" /
                       "estimate.json").read_text())


def test_compares_own_run_term_covers_the_truths_its_measurement_allows():
    """compare's own RUN_SD and RUN_DF, against run levels drawn from what the measurement
    (benchmarks/run_term, its estimate and runs) allows: the truth's square the estimate's
    times (runs - 1) over a chi-square. Each tail lies within 1 point of 2.5 % (Satterthwaite's
    approximation with few degrees of freedom is off by up to half a point: 2.8-2.9 %
    measured); a term of 0 misses 6.6 % a side, one three times too wide 0.05 %: both fail."""
    est = measured_run_term()
    k = est["runs"] - 1
    assert comparison.RUN_DF == k
    assert comparison.RUN_SD == pytest.approx(est["run_sd"], abs=0.0005)
    below, above = two_runs_apart(3, lambda rng: est["run_sd"] * math.sqrt(k / rng.chisquare(k)),
                                  lambda rng, truth: None)
    assert 0.015 <= below <= 0.035, (below, above)
    assert 0.015 <= above <= 0.035, (below, above)


@pytest.mark.parametrize("repeats", [3, 5])
def test_a_cells_interval_covers_on_each_side(repeats):
    """stats.geometric: the interval of one cell's typical step (geometric mean of its
    repeats' medians), per side."""
    rng = np.random.default_rng(300 + repeats)
    logs = rng.normal(0, SPREAD, (N, repeats))
    ci = np.array([stats.geometric(np.exp(row).tolist()).ci for row in logs])
    assert covers_on_each_side(ci[:, 0], ci[:, 1]), tails(ci[:, 0], ci[:, 1], 1.0)


def test_the_run_terms_interval_covers_on_each_side():
    """stats.run_term from 6 runs of 2 cells, 4 repeats each, a shared run shift of 5 % and
    12 % between repeats: conservative by design (runs - 1 degrees of freedom), so each
    tail is at most 2.5 % plus Monte Carlo error; and not vacuous: the truth lies above the
    interval in about 1 % of the studies (an interval of [0, inf) never misses)."""
    rng = np.random.default_rng(7)
    sims, true = 3000, 0.05
    below = above = 0
    for _ in range(sims):
        shift = rng.normal(0, true, 6)
        cells = [[list(rng.normal(0, 0.12, 4) + shift[r] + c) for r in range(6)] for c in range(2)]
        est = stats.run_term(cells)
        below += est.high < true
        above += est.low > true
    bound = 0.025 + 2.5 * math.sqrt(0.025 * 0.975 / sims)
    assert below / sims <= bound, (below / sims, above / sims)
    assert above / sims <= bound, (below / sims, above / sims)
    assert above / sims >= 0.005, (below / sims, above / sims)  # measured 1.2 %
