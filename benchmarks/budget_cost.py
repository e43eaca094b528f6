"""What a GC budget costs a test: the same loop as a plain test and as a budgeted one, each
in a pytest session of its own (`-p no:cacheprovider -o addopts=`), timed as a whole
process over several runs; the cost is the budgeted session's time less the plain one's.

Loops: a pure-Python loop of 300 steps that keeps a record a step and makes cyclic
garbage (what a budget looks at), and gcbench's Equinox (`eqx.filter_jit`) step of the
vit workload at batch 8 (60 steps after 3 warm-up), each budget as it passes: with the
default `sites="on failure"` (no tracing unless it fails), with sites traced in the measured
run (`sites=True`) and never (`sites=False`).

    python benchmarks/budget_cost.py [--runs 3] [--jax] [--objects 20]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

TESTS = textwrap.dedent('''
    import pytest

    HISTORY = []


    class Node:
        def __init__(self):
            self.me = self


    def python_step(i):
        HISTORY.append({"step": i, "metrics": {"loss": [0.5]}})
        for _ in range(OBJECTS):
            Node()


    def test_python_plain():
        for i in range(303):
            python_step(i)


    @pytest.mark.parametrize("sites", ["on failure", True, False])
    def test_python_budget(gc_budget, sites):
        with gc_budget(warmup=3, sites=sites) as b:
            for i in range(303):
                with b.step():
                    python_step(i)


    def _vit():
        from gcbench.measuring import worker
        from gcbench.measuring.cell import Cell

        cell = Cell("equinox-filter", "vit", "default", 0, 1, 0, 60, 3, 0, 10, batch_size=8)
        trainer, schedule, _, _, _ = worker.prepare(cell, progress=lambda *a: None)
        return trainer, schedule


    def test_jax_plain():
        trainer, schedule = _vit()
        for i in range(63):
            trainer.step(schedule[i])


    @pytest.mark.parametrize("sites", ["on failure", True, False])
    def test_jax_budget(gc_budget, sites):
        trainer, schedule = _vit()
        with gc_budget(warmup=3, sites=sites) as b:
            for i in range(63):
                with b.step():
                    trainer.step(schedule[i])
''')


def timed(project: pathlib.Path, nodeid: str) -> float:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", nodeid]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=project, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    took = time.monotonic() - start
    if proc.returncode not in (0, 5):
        raise SystemExit(proc.stdout[-3000:])
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jax", action="store_true", help="the Equinox step too")
    ap.add_argument("--objects", type=int, default=20, help="cyclic objects the pure-Python step makes")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = pathlib.Path(tmp)
        (project / "test_cost.py").write_text(TESTS.replace("OBJECTS", str(a.objects)))
        kinds = ["python"] + (["jax"] if a.jax else [])
        for kind in kinds:
            ids = {"plain": f"test_cost.py::test_{kind}_plain",
                   "budget (sites on failure)": f"test_cost.py::test_{kind}_budget[on failure]",
                   "budget, sites=True": f"test_cost.py::test_{kind}_budget[True]",
                   "budget, sites=False": f"test_cost.py::test_{kind}_budget[False]"}
            got = {name: [] for name in ids}
            for _ in range(a.runs):  # interleaved: the machine's drift falls on each alike
                for name, nodeid in ids.items():
                    got[name].append(timed(project, nodeid))
            base = statistics.median(got["plain"])
            print(f"{kind}: " + "; ".join(f"{name} {statistics.median(v):.2f} s (min {min(v):.2f}, max {max(v):.2f})"
                                         + ("" if name == "plain" else f", +{statistics.median(v) - base:.2f} s")
                                         for name, v in got.items()))


if __name__ == "__main__":
    main()
