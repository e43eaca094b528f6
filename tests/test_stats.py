import math

import numpy as np
import pytest

from gcbench import stats


def spiky_series(n=1000, base=10.0, spike=50.0, every=10, full_every=20):
    wall = np.full(n, base * 1e6)
    wall[every - 1 :: every] = spike * 1e6
    gc_ns = np.zeros(n)
    gc_ns[every - 1 :: every] = (spike - base) * 1e6
    colls = np.zeros((n, 3), int)
    colls[every - 1 :: every, 0] = 1
    colls[full_every - 1 :: full_every, 2] = 1
    return wall, gc_ns, colls


def test_spikes_period_and_full_collections_known_answer():
    wall, gc_ns, colls = spiky_series()
    s = stats.series_stats(wall, gc_ns, colls, colls[:, 2])
    assert s["steps"] == 1000
    assert s["median_ms"] == 10.0
    assert s["spikes"] == 100 and s["spike_period"] == 10.0
    assert s["spikes_with_full_gc"] == 0.5  # every 2nd spike coincides with a full collection
    assert s["max_ms"] == 50.0 and s["max_over_median"] == 5.0
    assert s["gc_share"] == pytest.approx(100 * 40 / (900 * 10 + 100 * 50))
    assert s["collections_per_1000"] == [100.0, 0.0, 50.0]
    assert s["full_per_1000"] == 50.0
    assert s["full_gc_step_ratio"] == 5.0  # every full collection falls in a 50 ms step
    assert s["mean_ms"] == pytest.approx(14.0)
    assert s["median_ci_ms"] == (10.0, 10.0)
    assert s["warnings"] == []


def test_spike_factor_is_respected():
    wall, gc_ns, colls = spiky_series(spike=25.0)
    assert stats.series_stats(wall, gc_ns, colls, colls[:, 2], spike_factor=3.0)["spikes"] == 0
    assert stats.series_stats(wall, gc_ns, colls, colls[:, 2], spike_factor=2.0)["spikes"] == 100


def test_percentiles_of_a_ramp():
    wall = np.arange(1, 101) * 1e6
    s = stats.series_stats(wall, np.zeros(100), np.zeros((100, 3)), np.zeros(100))
    assert s["median_ms"] == 50.5 and s["p90_ms"] == pytest.approx(90.1) and s["p99_ms"] == pytest.approx(99.01)
    assert s["spikes"] == 0 and s["spike_period"] is None and s["spikes_with_full_gc"] is None
    lo, hi = s["median_ci_ms"]
    assert 35 < lo < 50.5 < hi < 65
    assert any("wide 95 % interval" in w for w in s["warnings"])


def test_short_cell_is_flagged():
    s = stats.series_stats(np.full(20, 1e6), np.zeros(20), np.zeros((20, 3)), np.zeros(20))
    assert s["warnings"] == ["only 20 timed steps (< 100)"]


def test_bootstrap_is_reproducible_and_covers_the_median():
    rng = np.random.default_rng(0)
    x = rng.lognormal(0, 0.3, 500)
    assert stats.bootstrap_median_ci(x) == stats.bootstrap_median_ci(x)
    lo, hi = stats.bootstrap_median_ci(x)
    assert lo < np.median(x) < hi and hi - lo < 0.2


def test_julia_results_use_gc_full():
    doc = {"wall_ns": [1, 2, 3], "gc_collections": [[0], [1], [0]], "gc_full": [0, 1, 0]}
    assert stats.full_collections(doc).tolist() == [0, 1, 0]
    doc = {"wall_ns": [1, 2], "gc_collections": [[1, 0, 0], [0, 0, 1]]}
    assert stats.full_collections(doc).tolist() == [0, 1]


def test_mann_whitney_known_values():
    u, p = stats.mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert u == 0
    # z = (12.5 - 0.5) / sqrt(25 * 11 / 12); p = erfc(z / sqrt 2)
    assert p == pytest.approx(math.erfc(12 / math.sqrt(25 * 11 / 12) / math.sqrt(2)))
    assert p == pytest.approx(0.01219, abs=1e-4)
    assert stats.mann_whitney([1, 1, 1], [1, 1, 1])[1] == 1.0
    rng = np.random.default_rng(1)
    a, b = rng.normal(10, 1, 300), rng.normal(10, 1, 300)
    assert stats.mann_whitney(a, b)[1] > 0.01
    assert stats.mann_whitney(a, b + 1)[1] < 1e-10
