"""The statistics of step series, on series whose answers are known."""

import math

import numpy as np
import pytest

from gcbench import stats
from simulate import series


def ar1(rng, n, phi, sd=1.0):
    x = np.empty(n)
    x[0] = rng.normal(0, sd)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + rng.normal(0, sd)
    return x


def test_block_length_follows_the_autocorrelation():
    rng = np.random.default_rng(0)
    white = [stats.block_length(rng.normal(size=500)) for _ in range(20)]
    sticky = [stats.block_length(ar1(rng, 500, 0.9)) for _ in range(20)]
    assert np.median(white) <= 2
    assert np.median(sticky) >= 10
    assert all(b <= min(math.ceil(3 * math.sqrt(500)), 500 // 3) for b in sticky)
    assert stats.block_length(np.ones(100)) == 1 and stats.block_length([1.0, 2.0]) == 1


def test_block_length_ignores_the_size_of_a_few_spikes():
    rng = np.random.default_rng(1)
    x = rng.normal(10, 0.1, 600)
    spiky = x.copy()
    spiky[::50] *= 100
    assert stats.block_length(spiky) == stats.block_length(x) or abs(stats.block_length(spiky) - stats.block_length(x)) <= 1


def test_moving_blocks_are_contiguous_runs():
    rng = np.random.default_rng(2)
    idx = stats.block_indices(20, 5, 3, rng)
    assert idx.shape == (3, 20)
    for row in idx:
        for start in range(0, 20, 5):
            run = row[start:start + 5]
            assert (np.diff(run) == 1).all() and 0 <= run[0] <= 15


def test_median_interval_covers_the_truth_with_autocorrelated_steps():
    """The interval of the median of medians covers the true median about 95 % of the time
    for repeats with AR(1) steps and a level per repeat, where an interval that treats steps
    as independent would cover far less often."""
    rng = np.random.default_rng(3)
    covered = naive = 0
    trials = 60
    for _ in range(trials):
        walls = [series(rng, 300, 10.0)[0] for _ in range(5)]
        ci = stats.median_of_medians(walls, samples=500, seed=1)["ci"]
        covered += ci[0] <= 10e6 <= ci[1]
        pooled = np.concatenate(walls).astype(float)
        boot = np.median(pooled[rng.integers(0, len(pooled), (500, len(pooled)))], axis=1)
        lo, hi = np.percentile(boot, [2.5, 97.5])
        naive += lo <= 10e6 <= hi
    assert covered / trials >= 0.85
    assert naive / trials < covered / trials - 0.2


def test_mean_share_and_its_interval():
    gc = [np.r_[np.zeros(90), np.full(10, 5.0)], np.r_[np.zeros(95), np.full(5, 5.0)]]
    wall = [np.full(100, 10.0), np.full(100, 10.0)]
    out = stats.mean_ratio_of_sums(list(zip(gc, wall)), samples=300)
    assert out["per_repeat"] == [pytest.approx(0.05), pytest.approx(0.025)]
    assert out["value"] == pytest.approx(0.0375)
    assert out["ci"][0] < 0.0375 < out["ci"][1]
    zero = stats.mean_ratio_of_sums([(np.zeros(10), np.ones(10))])
    assert zero["value"] == 0 and zero["ci"] == (0.0, 0.0)


@pytest.mark.parametrize("count, lo, hi", [(0, 0.0, 3.689), (1, 0.0253, 5.572), (5, 1.623, 11.668),
                                            (24, 15.377, 35.710)])
def test_garwood_intervals_match_tables(count, lo, hi):
    got = stats.garwood(count)
    assert got == (pytest.approx(lo, abs=2e-3), pytest.approx(hi, abs=2e-3))


def test_rates_say_how_many_events_they_rest_on():
    r = stats.rate(24, 1200)
    assert r["rate"] == 20.0 and r["ci"][0] == pytest.approx(12.81, abs=0.01)
    assert stats.format_rate(r, "full collections") == \
        "24 full collections in 1,200 steps (20 per 1,000 steps, 95 % 12.8-29.8)"
    assert stats.format_rate(stats.rate(2, 900)) == "2 in 900 steps"  # below 5 events: the count alone
    assert stats.format_rate(stats.rate(0, 300)) == "0 in 300 steps"


def test_event_steps_against_their_neighbours():
    wall = np.full(300, 10e6)
    full = np.zeros(300, int)
    full[20::30] = 1
    wall[full > 0] = 50e6
    wall[150:] *= 1.5  # a level change: each event is judged against its own neighbours
    out = stats.event_summary([wall], [full])
    assert out["count"] == 10 and out["period"] == 30.0
    assert out["ratio"] == pytest.approx((5 + 50 / 15) / 2, rel=0.2)
    assert out["extra_ci_ns"] is not None
    assert out["cost_share"] == pytest.approx(np.sum(wall[full > 0] - np.where(np.arange(300)[full > 0] < 150, 10e6, 15e6))
                                              / wall.sum(), rel=1e-6)
    few = stats.event_summary([wall[:60]], [full[:60]])
    assert few["count"] == 2 and few["extra_ci_ns"] is None and len(few["extra_values_ns"]) == 2
    none = stats.event_summary([wall], [np.zeros(300)])
    assert none["count"] == 0 and "extra_ns" not in none


def test_drift_is_flagged_and_noise_is_not():
    rng = np.random.default_rng(4)
    loaded_start = np.r_[np.full(80, 18.0), np.full(220, 10.0)] * np.exp(rng.normal(0, 0.05, 300))
    d = stats.drift(loaded_start)
    assert d is not None and d["change"] < -0.3 and d["p"] < 0.01
    flags = sum(stats.drift(series(rng, 300, 10.0, shift_sd=0)[0]) is not None for _ in range(200))
    assert flags <= 10  # at most 5 % of steady repeats flagged
    assert stats.drift(np.full(12, 1.0)) is None  # too short to tell


def test_spikes_are_steps_over_a_factor_of_the_median():
    wall = np.r_[np.full(99, 10.0), 40.0]
    assert stats.spikes(wall, 3.0).tolist() == [99]
    assert stats.spikes(wall, 5.0).tolist() == []
