"""Every script in benchmarks/ runs (issue 68, item 1): those no other test runs, each at a
smoke size, end to end in a process of its own, and what it prints has its shape. (The
others are run by the tests that hold their figures: test_benchmark_figures.py,
test_schedule_footprint.py, test_gate_catalogue.py, test_user_fixes.py, ...)"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"

# script -> (its smoke-size arguments, a line of what it prints)
SMOKE = {
    "aa_test": (["--backends", "jax", "--workloads", "mlp", "--steps", "20", "--repeats", "3"], "false"),
    "allocator_free": (["--runs", "1", "--steps", "120"], "allocator free"),
    "backend_ratios": (["--steps", "10", "--warmup", "1", "--repeats", "1", "--workloads", "mlp", "--networks", "2"],
                       "jax"),
    "cross_run": (["--pairs", "40"], "run term"),
    "env_build": (["python=3.11", "--backends", ""], "installer"),
    "power_per_minute": (["--designs", "3x10", "--backends", "jax", "--workload", "mlp", "--batch-size", "16"],
                         "3x10"),
    "probe_overhead": (["--blocks", "2", "--block-steps", "5", "--networks", "2"], "probe"),
    "rebuild_reports": (["cpu-quick"], "cpu-quick"),
    "result_model": (["--steps", "2000", "--repeats", "1"], "steps"),
    "server_effect": (["--backend", "jax", "--workload", "mlp", "--steps", "20", "--groups", "3", "--per-group", "2",
                       "--batch-size", "32"], "within groups"),
    "user_loop_probe": (["--steps", "300", "--k", "1", "10"], "K"),
    "warm_workers": (["--backends", "jax", "--workload", "mlp", "--steps", "20", "--repeats", "3", "--rounds", "1",
                      "--batch-size", "32"], "a repeat besides its steps"),
}


def test_every_benchmark_is_run_by_some_test():
    """A new script in benchmarks/ is run here, or named by a test that runs it."""
    tests = " ".join(p.read_text() for p in (ROOT / "tests").glob("test_*.py") if p.name != pathlib.Path(__file__).name)
    unrun = [p.stem for p in BENCHMARKS.glob("*.py") if p.stem not in SMOKE and p.stem not in tests]
    assert not unrun, f"benchmarks no test runs: {unrun}: add a smoke size to SMOKE"


@pytest.mark.e2e
@pytest.mark.parametrize("name", sorted(SMOKE))
def test_the_benchmark_runs_at_its_smoke_size(name, tmp_path):
    args, shape = SMOKE[name]
    proc = subprocess.run([sys.executable, str(BENCHMARKS / f"{name}.py"), *args], capture_output=True, text=True,
                          timeout=900, cwd=tmp_path)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    assert shape.lower() in proc.stdout.lower(), proc.stdout[-2000:]
