"""The verdict that `run` prints first and every report puts on top (issue 32): who pays
the collector most, its full collections, and what another policy does to the time a run
takes, with that test's own interval; never an interval from fewer than 3 processes."""

from __future__ import annotations

import numpy as np

from gcbench.analysing import summary, verdict
from simulate import docs


def _with_gc(ds, share: float, full_every: int = 0):
    for d in ds:
        wall = np.asarray(d["wall_ns"], float)
        d["gc_ns"] = [int(w * share) for w in wall]
        rows = [[1, 0, 0] for _ in wall]
        if full_every:
            for i in range(full_every - 1, len(wall), full_every):
                rows[i] = [1, 1, 1]
                d["wall_ns"][i] = int(wall[i] * 6)
                d["gc_ns"][i] = int(wall[i] * 5)
        d["gc_collections"] = rows
    return ds


def test_the_verdict_names_who_pays_the_schedule_and_the_tested_fix():
    rng = np.random.default_rng(5)
    paying = _with_gc(docs(rng, 3, 20.0, steps=200, backend="nnx", workload="vit"), 0.05, full_every=25)
    off = docs(rng, 3, 8.0, steps=200, backend="nnx", workload="vit", policy="disable")
    quiet = _with_gc(docs(rng, 3, 10.0, steps=200, backend="jax", workload="vit"), 0.001)
    text = verdict.sentences(summary.summarize_all(paying + off + quiet))
    assert text[0].startswith("nnx/vit/default pays the collector most:") and "95 %" in text[0]
    assert "8 full collections in every repeat of 200 steps" in text[1]
    assert text[2].startswith("`disable` shortens its runs: they take") and "% less time (95 %" in text[2]
    assert text[3].startswith("1 of 3 cells had full collections")


def test_too_few_processes_give_values_not_intervals():
    rng = np.random.default_rng(6)
    two = _with_gc(docs(rng, 2, 20.0, steps=200, backend="nnx", workload="vit"), 0.05, full_every=50)
    text = " ".join(verdict.sentences(summary.summarize_all(two)))
    assert "processes" in text and "95 %" not in text


def test_a_collector_that_costs_nothing_is_one_sentence():
    rng = np.random.default_rng(7)
    assert verdict.sentences(summary.summarize_all(docs(rng, 3, 10.0, steps=100))) == [
        "The collector costs next to nothing in all 1 cells: at most 0.0 % (95 % 0.0-0.0 %) of step time "
        "(jax/mlp/default), and no full collection inside a timed step."]
    assert verdict.sentences([]) == []


def test_the_quick_suite_adds_the_equinox_case_on_the_vit():
    from gcbench.running.config import load_suite

    suite = load_suite("quick")
    combos = set(suite.combinations())
    assert {(b, "vit", p) for b in ("equinox-filter", "equinox-partition", "nnx") for p in ("default", "disable")} \
        <= combos
    assert {w for _, w, _ in combos} == {"mlp", "vit"} and {p for _, w, p in combos if w == "mlp"} == {"default"}
    assert {c.batch_size for c in suite.cells() if c.workload == "vit"} == {8}
    assert len(suite.cells()) == 3 * (9 + 6)
