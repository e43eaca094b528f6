"""The verdict that `run` prints first and every report puts on top (issue 32): who pays
the collector most, its full collections, and what another policy does to the time a run
takes, with that test's own interval; never an interval from fewer than 3 processes."""

from __future__ import annotations

import numpy as np

from gcbench.analysing import summary
from gcbench.publishing import verdict
from simulate import docs


def _with_gc(ds, share: float, full_every: int = 0):
    for d in ds:
        wall = np.asarray(d.wall_ns, float)
        d.gc_ns = [int(w * share) for w in wall]
        rows = [[1, 0, 0] for _ in wall]
        if full_every:
            for i in range(full_every - 1, len(wall), full_every):
                rows[i] = [1, 1, 1]
                d.wall_ns[i] = int(wall[i] * 6)
                d.gc_ns[i] = int(wall[i] * 5)
        d.gc_collections = rows
    return ds


def test_the_verdict_names_who_pays_the_schedule_and_the_tested_fix():
    rng = np.random.default_rng(5)
    paying = _with_gc(docs(rng, 3, 20.0, steps=200, backend="nnx", workload="vit"), 0.05, full_every=25)
    off = docs(rng, 3, 8.0, steps=200, backend="nnx", workload="vit", policy="disable")
    quiet = _with_gc(docs(rng, 3, 10.0, steps=200, backend="jax", workload="vit"), 0.001)
    text = verdict.sentences(summary.summarize_all(paying + off + quiet))
    # counts first: the schedule and every generation's collections, then the time
    assert text[0] == ("nnx/vit/default pays the collector most. It makes 8 full collections in every repeat of 200 "
                       "steps, at steps 24, 49, 74, 99, 124, 149, 174, 199; 216 collections of every generation per "
                       "repeat (200/8/8 by generation).")
    assert text[1].startswith("It spends")
    assert "of its wall time in the collector" in text[1]
    assert "95 %" in text[1]
    assert text[2].startswith("Under `disable` it makes 0 full collections per repeat against 8. `disable` "
                              "shortens its runs: they take")
    assert "% less time (95 %" in text[2]
    assert text[3].startswith("1 of 3 cells had full collections")


def test_a_loaded_run_says_so_first_and_gives_counts_not_times():
    """Issue 40: repeats from a loaded machine: the first sentence says how loaded, shares
    are of CPU time, and no timed test (the policy's effect is said in counts)."""
    rng = np.random.default_rng(5)
    paying = _with_gc(docs(rng, 3, 20.0, steps=200, backend="nnx", workload="vit"), 0.05, full_every=25)
    off = docs(rng, 3, 8.0, steps=200, backend="nnx", workload="vit", policy="disable")
    for d in paying + off:
        d.machine_state.update(cpu_count=2, others_cores=1.2, steal=0.0, load_seconds=4.0)
        d.cpu_ns = [w // 2 for w in d.wall_ns]
        d.gc_cpu_ns = [g // 2 for g in d.gc_ns]
    text = verdict.sentences(summary.summarize_all(paying + off))
    assert text[0] == ("The machine was loaded: 6 of 6 repeats ran while other processes used 1.2 of 2 cores. "
                       "Times are not judged; the collection counts are judged: load does not stretch them, though a "
                       "JAX step's can move by a collection where its runtime's threads free objects at other "
                       "moments; every GC share below is of CPU time, which load stretches less than wall time.")
    assert text[1].startswith("nnx/vit/default pays the collector most. It makes 8 full collections in every repeat")
    assert "of its CPU time in the collector" in text[2]
    assert "mean step" not in text[2]
    assert "longer" not in text[2]
    assert text[3].startswith("Under `disable` it makes 0 full collections per repeat against 8")
    assert "not judged" in text[3]
    assert "of its CPU time in the collector (its time is not judged" in text[3]


def test_too_few_processes_give_values_not_intervals():
    rng = np.random.default_rng(6)
    two = _with_gc(docs(rng, 2, 20.0, steps=200, backend="nnx", workload="vit"), 0.05, full_every=50)
    text = " ".join(verdict.sentences(summary.summarize_all(two)))
    assert "processes" in text
    assert "95 %" not in text


def test_a_collector_that_hardly_runs_is_one_sentence_that_counts_what_ran():
    """Issue 55: never "costs nothing" while a collection ran: what ran is counted."""
    rng = np.random.default_rng(7)
    assert verdict.sentences(summary.summarize_all(docs(rng, 3, 10.0, steps=100))) == [
        "The collector took at most 0.0 % (95 % 0.0-0.0 %) of its wall time in all 1 cells (jax/mlp/default): no "
        "collection at all inside the timed steps."]
    young = docs(rng, 3, 10.0, steps=100)
    for d in young:
        colls = np.asarray(d.gc_collections)
        colls[::10, 0] = 1
        d.gc_collections = colls.tolist()
    said = verdict.sentences(summary.summarize_all(young))
    assert said[-1].endswith("30 young collections and no full one inside the timed steps.")
    assert verdict.sentences([]) == []


def test_the_quick_suite_is_the_equinox_case_on_the_vit():
    """Issue 40: the first look in under two minutes: the seed's Equinox case (filter_jit
    against a partitioned jit, and NNX) on the ViT at batch 8, NNX with the collector off too."""
    from gcbench.running.config import load_suite

    suite = load_suite("quick")
    combos = set(suite.combinations())
    assert combos == {(b, "vit", "default") for b in ("equinox-filter", "equinox-partition", "nnx")} | \
        {("nnx", "vit", "disable")}
    assert {c.batch_size for c in suite.cells()} == {8}
    assert {c.steps for c in suite.cells()} == {100}
    assert len(suite.cells()) == 3 * 4


def test_a_partly_loaded_run_names_the_loaded_cells_and_judges_the_others():
    """Only some cells ran loaded: the first sentence names them, says their times are not
    judged, and the times of the quiet cells are (the policy test of two quiet cells stands)."""
    rng = np.random.default_rng(7)
    paying = _with_gc(docs(rng, 3, 20.0, steps=200, backend="nnx", workload="vit"), 0.05, full_every=25)
    off = docs(rng, 3, 8.0, steps=200, backend="nnx", workload="vit", policy="disable")
    other = docs(rng, 3, 10.0, steps=200, backend="jax", workload="vit")
    for d in other:
        d.machine_state.update(cpu_count=2, others_cores=1.2, steal=0.0, load_seconds=4.0)
    text = verdict.sentences(summary.summarize_all(paying + off + other))
    assert text[0].startswith("The machine was loaded: 3 of 9 repeats ran while other processes used 1.2 of 2 cores, "
                              "in 1 of 3 cells (jax/vit/default). Their times are not judged")
    assert "the other cells' times are" in text[0]
    assert any("`disable` shortens its runs" in t or ("`disable`" in t and "time" in t) for t in text[1:])


def test_one_cell_is_not_said_to_pay_the_most():
    """A user's loop alone: its counts are the answer, not a ranking of one."""
    rng = np.random.default_rng(5)
    one = _with_gc(docs(rng, 3, 20.0, steps=200, backend="nnx", workload="vit"), 0.05, full_every=25)
    text = verdict.sentences(summary.summarize_all(one))
    assert text[0].startswith("nnx/vit/default makes 8 full collections in every repeat of 200 steps")
    assert not any("most" in t for t in text)
