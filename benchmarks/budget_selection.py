"""GC budgets: the counts of one budgeted test by how pytest selected it, measured in the
test's own process (the plugin's only mode since issue 54; issue 42's fresh interpreter
per budget gave 1,364.17 promotions a step to the Equinox test in every mode as the
diagnosis counted them; in the test's own process the probe's count, which the budget
judges, is 1,368.12 in every mode), with each session's time.

Three budgeted tests in two files of a throwaway project: a pure-Python loop that keeps
records, gcbench's raw-JAX step and its Equinox (`eqx.filter_jit`) step of the vit
workload (1 network, batch 8, 60 timed steps). Each is run alone (its node id), in its file
(after the tests before it), in the whole suite, and in the whole suite under `-n 2`; per
mode, the promotions per step and collections per generation that `--gc-budget-report`
saved.

    python benchmarks/budget_selection.py [--repeats 2] [--tests NAME,...] [--out FILE]

`--out benchmarks/measured/budget_selection.json` is the run docs/gc-budgets.md quotes
(tests/test_benchmark_figures.py holds the page to it).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

from gcbench.measuring import results

STEPS = textwrap.dedent('''
    import pytest

    HISTORY = []


    def test_python_records(gc_budget):
        with gc_budget(warmup=3) as b:
            for i in range(4000):
                with b.step():
                    HISTORY.append({"step": i, "metrics": {"loss": [0.5]}})


    def _vit(backend, gc_budget):
        from gcbench.measuring import worker
        from gcbench.measuring.cell import Cell

        cell = Cell(backend, "vit", "default", 0, 1, 0, 60, 3, 0, 10, batch_size=8)
        trainer, schedule, _, _, _ = worker.prepare(cell, progress=lambda *a: None)
        with gc_budget(warmup=3, sites=False) as b:
            for i in range(63):
                with b.step():
                    trainer.step(schedule[i])


    def test_jax_vit(gc_budget):
        _vit("jax", gc_budget)


    def test_equinox_vit(gc_budget):
        _vit("equinox-filter", gc_budget)
''')
OTHER = textwrap.dedent('''
    import functools


    @functools.lru_cache(maxsize=None)
    def table(n):
        return [{"i": i} for i in range(n)]


    def test_fill_caches():  # no budget: it only leaves state behind, as a real suite's tests do
        for n in range(200):
            table(n)
''')
MODES = {"alone": ["test_steps.py::{test}"], "file": ["test_steps.py"], "suite": [], "suite -n 2": ["-n", "2"]}
TESTS = ("test_python_records", "test_jax_vit", "test_equinox_vit")


def counts(report: pathlib.Path) -> dict:
    """Per test, the promotions a step (the probe's: what the budget judges) and the
    collections per generation in the timed steps."""
    out = {}
    for doc in results.load_dir(report):
        colls = np.asarray(doc.gc_collections).reshape(len(doc.wall_ns), -1).sum(axis=0).tolist()
        promoted = doc.gc_promoted
        name = next(t for t in TESTS if t in doc.workload)
        out[name] = {"promotions_per_step": round(float(np.mean(promoted)), 2), "collections": colls}
    return out


def run(project: pathlib.Path, args: list[str], report: pathlib.Path) -> dict:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
           f"--gc-budget-report={report}", *args]
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=project, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    if proc.returncode != 0:
        raise SystemExit(proc.stdout[-3000:] + proc.stderr[-2000:])
    return {name: dict(c, seconds=round(time.monotonic() - started, 1)) for name, c in counts(report).items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=2, help="runs of each mode (fresh pytest sessions)")
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    ap.add_argument("--tests", default=",".join(TESTS), help=f"the budgeted tests to run (of {', '.join(TESTS)})")
    a = ap.parse_args()
    tests = tuple(a.tests.split(","))
    unknown = sorted(set(tests) - set(TESTS))
    if unknown:
        sys.exit(f"budget_selection: no test {', '.join(unknown)}; tests are {', '.join(TESTS)}")
    selected = " or ".join([*(t.removeprefix("test_") for t in tests), "fill_caches"])  # the state-leaving test too
    table = []
    with tempfile.TemporaryDirectory() as tmp:
        project = pathlib.Path(tmp) / "project"
        project.mkdir()
        (project / "test_steps.py").write_text(STEPS)
        (project / "test_a_other.py").write_text(OTHER)
        k = 0
        for mode, args in MODES.items():
            for r in range(a.repeats):
                for test in (tests if mode == "alone" else (None,)):
                    k += 1
                    chosen = [x.format(test=test) for x in args] + ([] if mode == "alone" else ["-k", selected])
                    got = run(project, chosen, pathlib.Path(tmp) / f"r{k}")
                    for name, c in got.items():
                        row = {"mode": mode, "repeat": r, "test": name, **c}
                        table.append(row)
                        print(json.dumps(row), flush=True)
    print("\ntest                 promotions/step by mode (alone | file | suite | suite -n 2)")
    for test in tests:
        cells = []
        for mode in MODES:
            vals = sorted({r["promotions_per_step"] for r in table if r["test"] == test and r["mode"] == mode})
            cells.append("/".join(f"{v:g}" for v in vals))
        colls = sorted({tuple(r["collections"]) for r in table if r["test"] == test})
        print(f"{test:20} {' | '.join(cells)}   collections {' or '.join(map(str, colls))}")
    if a.out:
        pathlib.Path(a.out).write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
