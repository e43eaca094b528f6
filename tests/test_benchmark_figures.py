"""The figures docs/statistics.md quotes from the gate's benchmarks are the ones they wrote
(`benchmarks/measured/`, written by benchmarks/gate_catalogue.py and
benchmarks/starting_heaps.py), and every resolution compare judges at stands above what a
starting heap moved the rate by there. The e2e tier reruns the catalogue itself
(tests/test_gate_catalogue.py)."""

from __future__ import annotations

import json
import pathlib

from gcbench.analysing import comparison

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "measured"
PAGE = " ".join((ROOT / "docs" / "statistics.md").read_text().split())


def said(sentence: str) -> None:
    assert " ".join(sentence.split()) in PAGE, f"docs/statistics.md does not say: {sentence}"


def test_the_catalogues_spreads_are_quoted_and_below_every_resolution():
    r = json.loads((RESULTS / "gate_catalogue.json").read_text())
    s, steps = r["spreads"], r["steps"]
    assert all(c["ok"] for c in r["catalogue"]), [c for c in r["catalogue"] if not c["ok"]]
    assert sum(r["heaps"].values()) == 0
    pairs = 10 * len(r["heaps"])
    said(f"allocations by at most {s['pressure']:.2f} a step, promotions by {s['promotions']:.2f}, objects kept "
         f"by {s['growth']:.2f} ({s['growth'] * steps:.0f} over the window")
    said(f"bytes kept by {s['kib_kept_per_1000']:.1f} KiB per 1,000 steps ({s['kib_kept_per_1000'] * steps / 1000:.1f} "
         f"KiB over the window); none of the {pairs} pairs fired")
    assert s["pressure"] < comparison.PRESSURE_RESOLUTION.objects
    assert s["promotions"] < comparison.PROMOTIONS_RESOLUTION.objects
    assert s["growth"] * steps < comparison.RETAINED_PER_WINDOW
    assert s["kib_kept_per_1000"] * steps / 1000 < comparison.KIB_PER_WINDOW


def _range(values) -> str:
    values = list(values)
    return f"{min(values):,.0f}-{max(values):,.0f}"


def test_the_vit_figures_are_the_starting_heaps_benchmarks():
    r = json.loads((RESULTS / "starting_heaps.json").read_text())
    eqx, nnx = r["equinox-filter"], r["nnx"]
    said(f"by {_range(x['promotions'] for x in eqx)} a step for equinox-filter")
    said(f"and {_range(x['promotions'] for x in nnx)} for nnx")
    work = [x["examined"] for x in eqx]
    spread = (max(work) - min(work)) / max(work)
    said(f"moved by up to {100 * spread:.0f} % there (equinox-filter: {_range(work)}")
    assert spread < comparison.GC_WORK_RESOLUTION.share
    promoted = [x["promotions"] for x in eqx]
    assert (max(promoted) - min(promoted)) / max(promoted) < comparison.PROMOTIONS_RESOLUTION.share
    kept = {x["growth"] for x in nnx}
    assert kept == {0.0}, kept  # read at the end of steps that held a full collection: no objects in flight
    said("read 0 a step for nnx from every starting heap")
    nnx_work = [x["examined"] for x in nnx]
    said(f"{100 * (max(nnx_work) - min(nnx_work)) / max(nnx_work):.0f} % for nnx")


README = " ".join((ROOT / "README.md").read_text().split())


def test_readme_quotes_what_measuring_costs_from_the_benchmarks():
    """README's lines on what `gcbench.measure` costs are the committed runs of
    benchmarks/step_overhead.py and benchmarks/schedule_footprint.py (issue 66): a step
    within twice the least probe's cost + 1 µs, and the same collections of every
    generation bare, under the least probe and under gcbench."""
    steps = json.loads((RESULTS / "step_overhead.json").read_text())
    empty = steps["empty"]
    assert f"a step costs {empty['gcbench_ns']:,.0f} ns of CPU more (the least probe {empty['minimal_ns']:,.0f} ns;" \
        in README
    assert empty["within"]
    assert steps["work"]["within"]
    for body in ("empty", "work"):  # the rounds behind each median are kept
        assert len(steps[body]["rounds"]["gcbench"]) == steps["runs"] >= 3
    heap = json.loads((RESULTS / "schedule_footprint.json").read_text())
    runs = [r for mode in ("bare", "minimal", "gcbench") for r in heap[mode]]
    assert len({tuple(r["collections"]) for r in runs}) == 1
    added = heap["gcbench"][0]["heap"] - heap["minimal"][0]["heap"]
    c = heap["gcbench"][0]["collections"]
    assert f"`measure` adds {added:,} objects to your heap" in README
    assert f"({c[0]:,} / {c[1]:,} / {c[2]:,} in {heap['steps']:,} steps, bare and measured;" in README
