"""The gate's catalogue (issue 63), end to end: pure-Python loops users write, each side in
3 fresh processes under `gcbench.measure`, through `compare --fail-on` with every count
gate (benchmarks/gate_catalogue.py). The regressions users fear fail it with the new
verdicts; the same loop started from heaps 1,000 and 100,000 objects apart never does,
and the largest difference a starting heap made to each rate stays inside the resolution
compare judges it at."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from gcbench.analysing import comparison

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.e2e
def test_the_catalogue_fails_every_bug_and_no_starting_heap(tmp_path):
    out = tmp_path / "catalogue.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gate_catalogue.py"), "--cases", "done-when",
                           "--pairs", "10", "--json", str(out)], capture_output=True, text=True, timeout=900)
    report = json.loads(out.read_text())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    by = {r["key"]: r for r in report["catalogue"]}
    assert "more-full-gc" in by["period-60"]["fired"]
    assert "a full collection every" in by["period-60"]["summary"] or "more full GCs" in by["period-60"]["summary"]
    assert "more-retained" in by["retain-33"]["fired"]
    assert "more-allocations" in by["pressure-3"]["fired"]
    assert "more-retained" in by["leak-2-flat"]["fired"]
    assert by["bytes-1k"]["fired"] == ["more-memory-kept"]  # untracked: no count sees it, the allocator does
    # pure Python (no _ctypes): the resident set, past the allocator's free memory and one heap extension
    assert by["bytes-16k-rss"]["fired"] == ["more-memory-kept"]
    assert by["same-periodic"]["fired"] == by["same-flat"]["fired"] == []
    # 10 pairs of each loop from heaps 1,000 and 100,000 objects apart: none fired
    heaps = report["heaps"]
    assert len(heaps) == 40
    assert {(r["loop"], r["apart"]) for r in heaps} == {(loop, apart) for loop in ("periodic", "flat")
                                                          for apart in (1_000, 100_000)}
    assert [r for r in heaps if r["fired"]] == []
    # the periodic loop's period really moved with the heap (the case the period rule is for)
    periods = {r["apart"]: [p for side in ("period", "head_period") for p in r["rates"][side]] for r in heaps
               if r["loop"] == "periodic"}
    assert None in periods[100_000] or max(periods[100_000]) > 2 * min(periods[100_000])
    # what a starting heap moved each rate by, inside the resolution it is judged at
    spreads = report["spreads"]
    assert spreads["pressure"] < comparison.PRESSURE_RESOLUTION.objects
    assert spreads["promotions"] < comparison.PROMOTIONS_RESOLUTION.objects
    assert spreads["growth"] * report["steps"] < comparison.RETAINED_PER_WINDOW
    # KiB between a pair's closest readings: half the pairs read the allocator, half the resident set
    from_allocator = [all(r["rates"]["kib_kept_from_allocator"] + r["rates"]["head_kib_kept_from_allocator"])
                      for r in heaps]
    assert from_allocator.count(True) == from_allocator.count(False) == 20
    assert spreads["kib_kept_at_span"] < comparison.KIB_PER_WINDOW
    assert spreads["rss_kib_kept_at_span"] < comparison.RSS_KIB_PER_WINDOW
