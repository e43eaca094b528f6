"""`gcbench reproduce`: the batch calibration, and the table's rows and verdicts on results
whose answer is known (simulated step series, a hand-written memory document)."""

import numpy as np
import pytest

import simulate
from gcbench.analysing import seed_cases
from gcbench.measuring import program_memory

GIB = 2**30
QUIET = {"sd": 0.02, "shift_sd": 0.01, "base_ms": 10.0, "steps": 300, "workload": "vit"}


@pytest.mark.parametrize(("medians", "chosen"), [
    ({32: 28.9, 16: 21.1, 8: 15.9, 4: 16.1, 2: 11.4}, 2),  # measured here: only batch 2 is at most 15 ms
    ({16: 12.0, 8: 9.0, 4: 6.0}, 8),  # nearest 8 ms on a log scale
    ({32: 40.0, 16: 30.0}, 16),  # none short enough: the smallest batch tried
])
def test_the_calibration_picks_the_batch_nearest_8_ms_within_15(medians, chosen):
    assert seed_cases.calibration_choice(medians) == chosen


def _equinox_case(partition_every=100, filter_pause_ms=60.0):
    rng = np.random.default_rng(3)
    return (simulate.docs(rng, backend="equinox-filter", full_every=20, pause_ms=filter_pause_ms, **QUIET)
            + simulate.docs(rng, backend="equinox-partition", full_every=partition_every, pause_ms=60.0, **QUIET)
            + simulate.docs(rng, backend="nnx", full_every=30, pause_ms=40.0, **QUIET)
            + simulate.docs(rng, backend="equinox-filter", policy="disable", **QUIET))


def _rows(doc, case):
    return {r.claim.split(" ")[0] + " " + r.claim.split(" ")[1]: r for c in doc.cases if c.name == case for r in c.rows}


def test_equinox_rows_give_figures_with_intervals_and_verdicts():
    doc = seed_cases.build(["equinox-spikes"], _equinox_case(), {"chosen": 2}, None, None, {})
    assert doc.rule == seed_cases.RULE
    assert "widened" in doc.rule
    rows = _rows(doc, "equinox-spikes")
    assert rows["median step"].verdict == "setting"
    assert "at batch 2 on this CPU" in rows["median step"].measured
    spike = rows["a step"]
    # a 60 ms pause on 10 ms steps: 7 x, the seed's 6.2 x within 2x of its interval, not within it: said so
    assert spike.verdict == WIDE
    assert "(95 % " in spike.measured
    assert "15 full collections in every repeat of 300 steps" in spike.measured
    part = rows["eqx.partition +"]
    assert (
        part.verdict == "reproduced"
    )
    assert (
        "exact: fixed schedules" in part.measured
    )
    assert "3 full collections in every repeat" in part.measured
    assert part.ratio == "0.20"
    assert rows["Flax NNX:"].verdict == "not"
    assert "no compensating dip" in rows["Flax NNX:"].reason
    off = rows["disabling the"]
    assert off.verdict == "reproduced"
    assert "no full collections in any repeat" in off.measured


def test_the_nnx_row_looks_for_the_step_that_gives_the_time_back():
    docs = _equinox_case()
    for d in docs:
        if d.backend == "nnx":
            wall = np.asarray(d.wall_ns, float)
            after = np.flatnonzero(np.asarray(d.gc_collections).reshape(-1, 3)[:, 2]) + 1
            wall[after[after < len(wall)]] *= 0.3  # a spike down after every spike up
            d.wall_ns = wall.astype(np.int64).tolist()
    built = seed_cases.build(["equinox-spikes"], docs, {"chosen": 2}, None, None, {})
    row = _rows(built, "equinox-spikes")["Flax NNX:"]
    assert row.verdict == "reproduced"
    assert "the step after it 0.3" in row.measured


WIDE = "reproduced (only within the interval widened 2x for the hardware)"


@pytest.mark.parametrize(("ratio", "verdict"), [(6.25, "reproduced"), (3.2, WIDE), (12.0, WIDE), (2.5, "partly"),
                                            (30.0, "partly"), (0.8, "not")])
def test_one_rule_two_sided(ratio, verdict):
    """The seed's 6.25 x against a measured ratio with a 10 % interval: within 2x either way,
    said as such where only the widening lets it in."""
    assert seed_cases.verdict(ratio > 1, 6.25, ratio, (ratio * 0.9, ratio * 1.1)) == verdict


def test_weak_signatures_are_partly_or_not():
    # pauses of 15 ms on 10 ms steps (2.5 x), and a partition that spikes as often as filter
    doc = seed_cases.build(["equinox-spikes"], _equinox_case(partition_every=20, filter_pause_ms=15.0),
                          {"chosen": 2}, None, None, {})
    rows = _rows(doc, "equinox-spikes")
    assert rows["a step"].verdict == "partly"
    assert rows["eqx.partition +"].verdict == "not"


def test_a_case_that_could_not_run_says_why_and_the_rest_still_has_rows():
    rng = np.random.default_rng(0)
    from gcbench.measuring import results
    from gcbench.measuring.cell import Cell

    failed = results.new(Cell("equinox-filter", "vit", "default", 0, 1, 27978, 300, 2, 0, 10), "failed",
                         "worker exited with code 3\nTraceback ...")
    jax_lenet = simulate.docs(rng, backend="jax", workload="lenet5", repeats=2, steps=50)
    for d in jax_lenet:
        d.networks, d.params_counted = 5, 44_426
    def program(total, temp=0):
        return {"argument_bytes": 0, "output_bytes": 0, "temp_bytes": temp, "alias_bytes": 0, "total_bytes": total}

    def gather(dtype, m, fwd, grad):
        return {"kind": "gather", "size": "seed", "formulation": "seed", "index_dtype": dtype, "n": 128, "m": m,
                "forward": fwd, "gradient": grad, "floor_bytes": 0, "gradient_over_forward": 0.0,
                "gradient_over_floor": 0.0}

    memory_doc = program_memory.read({"cases": [
        gather("int32", 2048**3, program(int(128.01 * GIB)), program(int(224.02 * GIB))),
        gather("int16", 8 * GIB, program(int(80.01 * GIB)), program(int(176.02 * GIB), 128 * GIB)),
    ]}, "test")
    doc = seed_cases.build(list(seed_cases.CASES), [failed, *jax_lenet], {"chosen": 8}, memory_doc,
                          "no Julia installed", {})
    eqx = _rows(doc, "equinox-spikes")
    assert list(eqx) == ["every claim"]
    assert eqx["every claim"].reason == \
        "equinox-filter did not run: worker exited with code 3"
    flux = _rows(doc, "flux-many-small")
    assert flux["step time,"].verdict == "not run"
    assert flux["step time,"].reason == "Flux: no Julia installed"
    assert flux["parameters of"].measured.startswith("222,130")
    assert flux["parameters of"].verdict == "reproduced"
    gather = _rows(doc, "gather-memory")
    assert gather["compiled memory"].verdict == "reproduced"  # the forward's, then the gradient's
    assert [r.measured for c in doc.cases if c.name == "gather-memory" for r in c.rows][:2] == \
        ["128.01 GiB", "224.02 GiB"]
    assert (
        gather["an int16"].verdict == "reproduced"
    )
    assert (
        "for a 48 GiB int16 index" in gather["an int16"].measured
    )
    fourfold = gather["with an"]  # the seed's "fourfold": 2.2 x here, the direction only
    assert fourfold.verdict == "partly"
    assert "2.20 x" in fourfold.measured


def test_a_report_rebuilds_the_rows_from_the_results_they_rest_on():
    docs = _equinox_case()
    stored = seed_cases.build(["equinox-spikes"], docs, {"chosen": 2}, None, None, {})
    stored.cases[0].rows = []  # as if written by an older gcbench
    rebuilt = seed_cases.rebuild(stored, docs, None)
    assert rebuilt.cases[0].rows == seed_cases.build(["equinox-spikes"], docs, {"chosen": 2}, None, None,
                                                      {}).cases[0].rows
    inputs_missing = seed_cases.Reproduction([seed_cases.Case("x", "seed", {}, [])])
    assert seed_cases.rebuild(inputs_missing, docs, None) is inputs_missing


def test_a_match_only_through_the_widened_interval_is_named_as_such():
    """Issue 53: 12.55 x against the seed's 6.2 x passed only through the 2x widening."""
    assert seed_cases.verdict(True, 6.25, 6.5, (6.0, 7.0)) == "reproduced"
    assert seed_cases.verdict(True, 6.25, 12.55, (11.9, 13.2)).startswith("reproduced (only within the interval")
    assert seed_cases.verdict(True, 6.25, 30.0, (28.0, 33.0)) == "partly"


def test_the_answer_counts_every_claim_of_the_seeds_and_says_why_some_did_not_run():
    from gcbench.publishing.report.seed_section import answer

    Row, Case = seed_cases.Row, seed_cases.Case
    rows = [Row("median step", "-", verdict="setting"),
            Row("a full-collection step", "-", verdict="reproduced (only within the interval widened 2x for the "
                "hardware)"),
            Row("partition is rarer", "-", verdict="reproduced"), Row("nnx dips", "-", verdict="not")]
    flux = [Row("step time", "-", verdict="not run", reason="Flux: no Julia here"),
            Row("every 4th step", "-", verdict="not run", reason="Flux: no Julia here")]
    doc = seed_cases.Reproduction([Case("equinox", "000: equinox", {}, rows), Case("flux", "001: flux", {}, flux)])
    text = answer(doc)
    assert text.startswith("Of the seeds' 5 claims, 2 reproduced (1 of them only within the interval widened for "
                           "the hardware), 1 not, 2 not run.")
    assert "000: a full-collection step (only within the widened interval)" in text
    assert "not run: 001: step time, 001: every 4th step (Flux: no Julia here)" in text
