"""The statistics of repeats, on values whose answers are known."""

import math

import numpy as np
import pytest
from scipy import stats as sst

from gcbench.analysing import stats
from gcbench.core import wording
from gcbench.publishing import interval_text
from simulate import series


def test_t_interval_is_students():
    x = [10.0, 11.0, 12.5]
    lo, hi = stats.t_interval(x)
    half = sst.t.ppf(0.975, 2) * np.std(x, ddof=1) / math.sqrt(3)
    assert (lo, hi) == pytest.approx((np.mean(x) - half, np.mean(x) + half))
    assert stats.t_interval([4.0]) is None  # one process says nothing about a second one's luck
    assert stats.t_interval([2.0, 2.0, 2.0]) == (2.0, 2.0)


def test_geometric_mean_and_its_interval_on_the_log_scale():
    g = stats.geometric([10.0, 20.0, 40.0])
    assert g.value == pytest.approx(20.0)
    lo, hi = g.ci
    assert lo * hi == pytest.approx(400)  # symmetric on the log scale
    assert hi / lo > 10  # three repeats: two degrees of freedom, an honest and wide interval


def test_fewer_than_three_processes_give_their_values_not_an_interval():
    two = stats.geometric([7.5, 13.3])
    assert two.ci is None
    assert two.value == pytest.approx(math.sqrt(7.5 * 13.3))
    assert interval_text.fmt_paren(two.value, two.ci, values=two.per_repeat) == "9.99 (processes 7.5, 13.3)"
    assert interval_text.fmt_paren(7.5, None, values=[7.5]) == "7.5 (one process)"
    assert interval_text.fmt_ci(None, values=[7.5, 13.3], unit="ms") == \
        "no interval from fewer than 3 processes (processes 7.5, 13.3 ms)"
    assert stats.arithmetic([0.1, 0.2]).ci is None
    assert stats.t_interval([1.0, 2.0, 3.0]) is not None


def test_a_share_interval_stays_inside_zero_and_one():
    s = stats.arithmetic([0.001, 0.0, 0.05], bounds=(0.0, 1.0))
    assert s.ci[0] == 0.0
    assert s.value == pytest.approx(0.051 / 3)


def test_a_fixed_schedule_is_recognised_and_written_out():
    ev = np.zeros(300, int)
    ev[[82, 145, 193, 236]] = 1
    sched = stats.schedule([ev, ev.copy(), ev.copy()])
    assert sched.constant
    assert sched.same_steps
    assert sched.at == [82, 145, 193, 236]
    said = "4 full collections in every repeat of 300 steps, at steps 82, 145, 193, 236"
    assert wording.format_schedule(sched) == said
    assert wording.short_schedule(sched) == "4 in every repeat, same steps"
    assert stats.every(sched) == 75.0  # steps over events
    assert stats.per_1000(sched).ci == (pytest.approx(4 / 0.3), pytest.approx(4 / 0.3))
    moved = ev.copy()
    moved[[82, 83]] = [0, 1]
    other = stats.schedule([ev, moved])
    assert other.constant
    assert not other.same_steps
    assert wording.format_schedule(other).endswith("(at different steps)")
    varies = stats.schedule([ev, np.r_[ev[:150], np.zeros(150, int)]])
    assert not varies.constant
    assert varies.counts == [4, 2]

    assert wording.format_schedule(varies) == "4, 2 full collections in the repeats of 300 steps (6 in 600)"
    one = stats.schedule([ev])
    assert not one.constant
    assert wording.format_schedule(one).endswith("(one repeat)")
    none = stats.schedule([np.zeros(50, int)] * 3)
    assert none.constant
    assert wording.format_schedule(none) == "no full collections in any repeat of 50 steps"
    long = np.zeros(300, int)
    long[::20] = 1
    assert wording.format_schedule(stats.schedule([long, long])).endswith(
        "at steps 0, 20, 40, 60, 80, 100, 120, 140 and 7 more"
    )


def test_event_steps_against_their_neighbours_per_repeat():
    rng = np.random.default_rng(3)
    walls, fulls = [], []
    for extra in (40e6, 44e6, 36e6):
        wall = 10e6 * np.exp(rng.normal(0, 0.02, 300))
        full = np.zeros(300, int)
        full[20::30] = 1
        wall[full > 0] += extra
        wall[np.flatnonzero(full) + 1] *= 0.5  # the step after gives time back
        walls.append(wall)
        fulls.append(full)
    out = stats.event_summary(walls, fulls)
    assert out.count == 30
    assert out.every == 30.0
    assert out.schedule.same_steps
    assert out.extra_ns == pytest.approx(40e6, rel=0.02)  # the mean of the repeats' medians
    lo, hi = out.extra_ci_ns
    assert lo < 40e6 < hi
    assert hi - lo < 20e6
    assert out.ratio == pytest.approx(5.0, rel=0.05)
    assert out.after_ratio == pytest.approx(0.5, rel=0.05)
    assert out.after_ratio_ci[1] < 1
    single = stats.event_summary([walls[0], walls[1]], [fulls[0], np.zeros(300, int)])
    assert single.repeats_with_events == 1
    assert single.extra_ci_ns is None
    none = stats.event_summary(walls, [np.zeros(300)] * 3)
    assert none.count == 0
    assert none.extra_ns is None


def test_drift_is_flagged_and_noise_is_not():
    rng = np.random.default_rng(4)
    loaded_start = np.r_[np.full(80, 18.0), np.full(220, 10.0)] * np.exp(rng.normal(0, 0.05, 300))
    d = stats.drift(loaded_start)
    assert d is not None
    assert d.change < -0.3
    assert d.p < 0.01
    flags = sum(stats.drift(series(rng, 300, 10.0, shift_sd=0)[0]) is not None for _ in range(200))
    assert flags <= 4
    assert stats.drift(np.full(12, 1.0)) is None  # too short to tell


def test_detectable_change_is_where_the_power_reaches_80_percent():
    d = stats.detectable_change(0.10, 3, 3, 0.05)
    assert stats.t_power(math.log1p(d), 0.10, 3, 3, 0.05) == pytest.approx(0.80, abs=1e-6)
    assert stats.detectable_change(0.10, 8, 8, 0.05) < d  # more repeats, smaller changes
    assert stats.detectable_change(0.10, 3, 3, 0.05 / 30) > d  # a stricter level, larger ones
    assert stats.detectable_change(0.10, 1, 3, 0.05) is None
    # the power of a t test, checked against a direct simulation
    rng = np.random.default_rng(0)
    a = rng.normal(0, 0.1, (20000, 3))
    b = rng.normal(math.log1p(d), 0.1, (20000, 3))
    p = sst.ttest_ind(b, a, axis=1).pvalue
    assert np.mean(p < 0.05) == pytest.approx(0.80, abs=0.02)


def test_spikes_are_steps_over_a_factor_of_the_median():
    wall = np.r_[np.full(99, 10.0), 40.0]
    assert stats.spikes(wall, 3.0).tolist() == [99]
    assert stats.spikes(wall, 5.0).tolist() == []


def test_a_schedule_counts_collections_not_steps_that_hold_one():
    """Issue 40/41: a loop that calls gc.collect() twice in a step makes two full
    collections there; one call against two is then fewer, not the same."""
    twice, once = np.zeros(40, int), np.zeros(40, int)
    twice[::2], once[::2] = 2, 1
    a, b = stats.schedule([twice, twice.copy()]), stats.schedule([once, once.copy()])
    assert a.counts == [40, 40]
    assert b.counts == [20, 20]
    assert a.at == b.at
    assert wording.format_schedule(a).startswith("40 full collections in every repeat of 40 steps, at steps 0, 2, 4")
