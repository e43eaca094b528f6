"""A cell's repeats combined: flags, the median step, GC share and the schedule of full collections."""

import numpy as np
import pytest

from gcbench.analysing import summary
from simulate import docs


def test_the_repeats_of_a_cell_combine_with_intervals():
    rng = np.random.default_rng(0)
    cell = docs(rng, 4, 20.0, full_every=25, pause_ms=60)
    s = summary.summarize(cell).stats
    assert s.repeats == 4
    assert s.used == [0, 1, 2, 3]
    assert s.steps == 1200
    medians = [np.median(d.wall_ns) / 1e6 for d in cell]
    assert s.median_ms == pytest.approx(np.exp(np.mean(np.log(medians))))  # the geometric mean of the repeats'
    assert s.median_ci_ms[0] < s.median_ms < s.median_ci_ms[1]
    assert 16 < s.median_ms < 24
    assert s.full.count == 48
    assert s.full.rate.value == pytest.approx(40)
    assert s.full.schedule.constant
    assert s.full.schedule.counts == [12] * 4
    assert s.full.every == 25
    assert s.full.extra_ns == pytest.approx(60e6, rel=0.15)
    assert s.gc_share > 0.08
    assert s.gc_share_ci[0] < s.gc_share < s.gc_share_ci[1]
    assert s.language == "python"
    assert s.warnings == []


def with_a_loaded_start(cell: list[dict], repeat: int = 1) -> list[dict]:
    """`cell` with its repeat `repeat`'s first 100 steps on a loaded machine (1.8 x slower)."""
    wall = np.asarray(cell[repeat].wall_ns)
    wall[:100] = wall[:100] * 1.8
    cell[repeat].wall_ns = wall.tolist()
    return cell


def test_a_drifting_repeat_is_left_out_of_the_times_but_not_of_the_schedule():
    rng = np.random.default_rng(1)
    cell = with_a_loaded_start(docs(rng, 4, 10.0, full_every=50, pause_ms=30))  # three planned and a replacement
    colls = np.asarray(cell[1].gc_collections)
    colls[10, 2] = 1  # and one full collection more than the others
    cell[1].gc_collections = colls.tolist()
    s = summary.summarize(cell).stats
    assert s.used == [0, 2, 3]
    assert list(s.flagged) == [1]
    assert any("repeat 1: drift" in w and "(left out)" in w for w in s.warnings)
    assert s.median_ms < 11.5
    # the flagged repeat's schedule still counts, and its difference shows
    assert s.full.schedule.counts == [6, 7, 6, 6]
    assert not s.full.schedule.constant


def test_with_fewer_than_three_unflagged_the_flagged_repeat_is_kept():
    cell = with_a_loaded_start(docs(np.random.default_rng(1), 3, 10.0))
    s = summary.summarize(cell).stats
    assert s.used == [0, 1, 2]
    assert list(s.flagged) == [1]
    assert s.all_flagged


def test_a_run_measures_a_replacement_for_a_flagged_repeat():
    from gcbench.measuring.cell import Cell

    rng = np.random.default_rng(1)
    cell = with_a_loaded_start(docs(rng, 3, 10.0))
    planned = [Cell("jax", "mlp", "default", r, 2, 4992, 300, 2, 0, 10) for r in range(3)]
    extra = summary.replacements(planned, cell, 3)
    assert [c.repeat for c in extra] == [3]
    assert extra[0].backend == "jax"
    assert summary.replacements(planned + extra, cell, 3) == []  # one a cell, no more
    assert summary.replacements(planned, docs(rng, 3, 10.0), 3) == []  # nothing flagged, nothing to replace
    short = [Cell("jax", "mlp", "default", r, 2, 4992, 50, 2, 0, 10) for r in range(3)]
    assert summary.replacements(short, cell, 3) == []  # 50 steps a repeat: no interval worth protecting


def test_the_workers_own_load_is_not_a_flag():
    rng = np.random.default_rng(7)
    cell = docs(rng, 2, 10.0)
    cell[0].machine_state = {"cpu_count": 2, "load_before": 1.9, "load_after": 2.6}  # the worker itself
    cell[1].machine_state = {"cpu_count": 2, "load_before": 1.0, "load_after": 3.4}  # and someone else
    s = summary.summarize(cell).stats
    assert list(s.flagged) == [1]


def test_when_fewer_than_three_would_be_left_all_are_kept():
    rng = np.random.default_rng(6)
    cell = docs(rng, 3, 10.0)
    for d in cell[:2]:
        d.machine_state = {"cpu_count": 2, "load_before": 3.5}
    s = summary.summarize(cell).stats
    assert s.used == [0, 1, 2]
    assert sorted(s.flagged) == [0, 1]


def test_when_every_repeat_is_flagged_all_are_kept():
    rng = np.random.default_rng(2)
    cell = docs(rng, 2, 10.0)
    for d in cell:
        d.machine_state = {"cpu_count": 2, "load_before": 3.5, "load_after": 2.8}
    s = summary.summarize(cell).stats
    assert s.used == [0, 1]
    assert s.all_flagged
    assert any("load average 3.5 before the repeat, above the 3 runnable threads gcbench's own make" in w
               and "(kept" in w
               for w in s.warnings)


def test_julia_results_count_full_sweeps():
    rng = np.random.default_rng(3)
    cell = docs(rng, 2, 1.0, backend="flux")
    for d in cell:
        n = len(d.wall_ns)
        full = np.zeros(n, int)
        full[3::4] = 1
        d.gc_full = full.tolist()
        d.gc_collections = np.stack([np.zeros(n, int), full], axis=1).tolist()
        d.alloc_bytes = [1_300_000] * n
    s = summary.summarize(cell).stats
    assert s.language == "julia"
    assert s.full.count == 150
    assert s.full.every == 4
    assert s.alloc_bytes_per_step == 1_300_000


def test_cells_are_grouped_and_ordered_for_reading():
    rng = np.random.default_rng(4)
    mixed = docs(rng, 2, 5.0, backend="nnx", policy="disable") + docs(rng, 2, 5.0, backend="jax") + \
        docs(rng, 2, 5.0, backend="nnx") + docs(rng, 2, 5.0, backend="jax", workload="lenet5")
    labels = [cs.label for cs in summary.summarize_all(mixed)]
    assert labels == ["jax/mlp/default", "nnx/mlp/default", "nnx/mlp/disable", "jax/lenet5/default"]


def test_few_steps_and_one_repeat_are_warned_about():
    rng = np.random.default_rng(5)
    s = summary.summarize(docs(rng, 1, 10.0, steps=50)).stats
    assert any("only 50 timed steps" in w for w in s.warnings)
    assert any("one repeat" in w for w in s.warnings)


def test_the_host_share_is_the_mean_of_the_repeats_shares_with_its_interval():
    rng = np.random.default_rng(12)
    repeats = docs(rng, 3, 10.0, steps=100)
    for d, share in zip(repeats, (0.2, 0.3, 0.4), strict=True):
        d.host_ns = [int(w * share) for w in d.wall_ns]
    s = summary.summarize(repeats).stats
    assert s.host_share == pytest.approx(0.3, abs=1e-3)
    lo, hi = s.host_share_ci
    assert lo < 0.2
    assert hi > 0.4
    assert summary.summarize(docs(rng, 3, 10.0, steps=100)).measured.host_share is None  # not recorded: not shown
