"""What README and docs/ say about the committed reports and benchmarks, recomputed from
their raw data: each claim is the sentence the documentation holds, built here from the
numbers, so none can go stale without a failure naming it."""

from __future__ import annotations

import collections
import json
import pathlib
import sys

import numpy as np
import pytest

from gcbench.analysing import comparison, stats, summary
from gcbench.measuring import results
from gcbench.publishing import archive

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from conftest import documentation_text  # noqa: E402

FLAT = " ".join(documentation_text().split())  # README and docs/; sentences wrap: compared with single spaces


def cells(report: str) -> dict[tuple, list[dict]]:
    with archive.opened(ROOT / "reports" / report) as folder:
        docs = results.load_dir(folder, allow_empty=True)
    out = collections.defaultdict(list)
    for d in docs:
        if d.status == "ok":
            out[summary.cell_key(d)[:3]].append(d)
    return out


def said(sentence: str) -> None:
    assert " ".join(sentence.split()) in FLAT, f"neither README nor docs/ says: {sentence}"


def test_the_first_looks_counts_are_the_committed_reports():
    quick = cells("cpu-quick")
    nnx = quick[("nnx", "vit", "default")]
    full = [np.flatnonzero(summary.full_collections(d)).tolist() for d in nnx]
    assert all(f == full[0] for f in full)  # "at the same steps"
    every = {sum(summary.collections_by_generation(d)) for d in nnx}
    assert len(every) == 1
    said(f"`nnx` makes {len(full[0])} full collections in every repeat of {len(nnx[0].wall_ns)} steps, at the "
         f"same steps, and {every.pop()} collections of every generation per repeat")
    said(f"`nnx`'s full collections come one every {round(float(np.mean(np.diff(full[0]))))} steps")
    eqx = {int(summary.full_collections(d).sum()) for d in quick[("equinox-filter", "vit", "default")]}
    part = {int(summary.full_collections(d).sum()) for d in quick[("equinox-partition", "vit", "default")]}
    assert len(eqx) == 1
    assert part == {0}
    said(f"`equinox-filter` makes {eqx.pop()} full collection in every repeat, `equinox-partition` none.")


def test_the_default_suites_small_workloads_are_the_committed_report():
    default = cells("cpu-2core-default")
    parts = []
    for workload in ("mlp", "lenet5"):
        docs = [d for (b, w, _), ds in default.items() if w == workload for d in ds]
        steps = sum(len(d.wall_ns) for d in docs)
        colls = sum(sum(summary.collections_by_generation(d)) for d in docs)
        assert sum(int(summary.full_collections(d).sum()) for d in docs) == 0
        parts.append((colls, steps))
    (c1, s1), (c2, s2) = parts
    said(f"{c1} collections in {s1:,} timed steps on `mlp`, {c2} in {s2:,} on `lenet5`, none full")


def test_the_power_figures_are_computed_at_the_stated_spreads():
    lo, hi = (stats.detectable_change(s, 3, 3, comparison.ALPHA) for s in (0.09, 0.13))
    said(f"the spread between processes is 9-13 %: at 3 repeats a single comparison detects "
         f"{100 * lo:.0f}-{100 * hi:.0f} %")


def test_the_drift_flags_power_is_what_the_benchmark_measures():
    """README's figures are shares of the committed repeats, each a p-value against a bound:
    another CPU can round a repeat that sits on the bound the other way, so each figure is
    held to the benchmark's within one such repeat (and its rounding), never as a string."""
    import re

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import drift_flags

    got = drift_flags.inject(list(drift_flags.committed_repeats()))
    pattern = (r"a level step of 20 % injected into the committed repeats it leaves alone is flagged in (\d+) % of "
               r"them, one of 40 % in (\d+) %, a ramp to 40 % in (\d+) %")
    readme = " ".join((ROOT / "README.md").read_text().split())
    m = re.search(pattern, readme)
    assert m, "README states the drift flag's power"
    assert re.search(pattern, FLAT)
    for stated, name in zip(m.groups(), ("level step +20 %", "level step +40 %", "ramp to +40 %"), strict=True):
        share, n = got[name]["all"], got[name]["repeats"]
        assert abs(int(stated) - 100 * share) <= 0.5 + 200 / n, (name, stated, share, n)  # two repeats


def test_the_run_term_is_the_one_measured_in_separate_runs():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import run_term

    est, _ = run_term.estimate()
    assert est["runs"] >= 5
    assert est["cells"] >= 2
    written = json.loads((ROOT / "benchmarks" / "run_term" / "estimate.json").read_text())
    assert {k: written[k] for k in ("runs", "cells", "from")} == {k: est[k] for k in ("runs", "cells", "from")}
    assert written["run_sd"] == pytest.approx(est["run_sd"], abs=1e-5)
    assert comparison.RUN_SD == pytest.approx(round(est["run_sd"], 3))
    assert comparison.RUN_DF == est["runs"] - 1
    said(f"{100 * est['run_sd']:.1f} % (95 % {100 * est['low']:.1f}-{100 * est['high']:.1f} %) from {est['runs']} "
         "separate runs")
    def detectable(n):
        return stats.detectable_change(est["within_sd"], n, n, comparison.ALPHA, run_sd=comparison.RUN_SD,
                                       run_df=comparison.RUN_DF)
    three, six = detectable(3), detectable(6)
    floor = min(detectable(n) for n in range(3, 101))  # the run term's own 4 degrees of freedom bound it
    said(f"at 3 repeats a side {100 * three:.0f} %, at\n  6 {100 * six:.0f} %, and no number of repeats gets below "
         f"{100 * floor:.0f} %")
    # left out one run at a time: the term does not survive (docs/statistics.md says so)
    left = {name: x["run_sd"] for name, x in est["without"].items() if x}
    assert written["without"] == est["without"]
    assert min(left.values()) < est["run_sd"] / 3  # one run carries the term
    said(f"left out one run at a time it reads {100 * min(v for v in left.values() if v > est['run_sd'] / 3):.1f}-"
         f"{100 * max(left.values()):.1f} %, and {100 * min(left.values()):.1f} %")


def test_the_first_looks_policy_effect_is_the_reports_corrected_test():
    """README quotes the time `disable` saves as the committed report's verdict gives it:
    the report's own corrected test, so README, verdict and Findings say one thing."""
    import re

    page = (ROOT / "reports" / "cpu-quick" / "index.md").read_text()
    m = re.search(r"they take (\d+) % less time \(([\d.]+) % (\d+)-(\d+) % less\)", page)
    assert m, "the committed first look's verdict names no policy effect"
    said(f"its runs take {m.group(1)} % less time ({m.group(2)} % {m.group(3)}-{m.group(4)} %")


def test_the_default_suite_s_time_is_one_figure_everywhere():
    """Issue 69, item 5: `gcbench list` gave "about 30 minutes" (the suite file's comment)
    where README gave 20-25: the suite file, README and `list` now say the same."""
    import re

    readme = (ROOT / "README.md").read_text()
    said = re.search(r"the main job, the default suite: ([0-9-]+ minutes)", readme).group(1)
    suite = (ROOT / "python" / "gcbench" / "suites" / "default.toml").read_text()
    comment = " ".join(line.lstrip("# ") for line in suite.splitlines() if line.startswith("#"))
    assert f"{said} on a 2-core CPU" in comment
    assert "30 minutes" not in comment
