"""Every script in benchmarks/ runs (issue 68, item 1): those no other test starts as a
process, each at a smoke size, end to end in a process of its own, and what it prints has
its shape. (The others are started by the tests that hold their figures:
test_benchmark_figures.py, test_gate_catalogue.py, test_user_fixes.py, ...) A script a
test only imports, or names, is not run: its `main` and its arguments can break unseen
(inference.py and starting_heaps.py had)."""

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
    "budget_selection": (["--repeats", "1", "--tests", "test_python_records"], "promotions/step by mode"),
    "cross_run": (["--pairs", "40"], "run term"),
    "drift_flags": (["--null", "5", "--inject"], "false flags"),
    "explain_cost": (["--steps", "5", "--repeats", "1"], "explained"),
    "hostile": (["--docs", "1", "--only", "malformed"], "| all |"),
    "inference": (["--pairs", "100"], "interval of the median covers"),
    "env_build": (["python=3.11", "--backends", ""], "installer"),
    "power_per_minute": (["--designs", "3x10", "--backends", "jax", "--workload", "mlp", "--batch-size", "16"],
                         "3x10"),
    "probe_overhead": (["--blocks", "2", "--block-steps", "5", "--networks", "2"], "probe"),
    "load_margins": (["--cells", "jax/mlp", "--rounds", "1", "--steps", "20", "--repeats", "1", "--conditions",
                      "quiet,1 busy"], "| jax/mlp | 1 busy |"),
    "noise": ([], "reproductions"),
    "rebuild_reports": (["cpu-quick"], "cpu-quick"),
    "result_model": (["--steps", "2000", "--repeats", "1"], "steps"),
    # from the committed runs alone: the estimate it writes is the committed one, byte for byte
    "run_term": ([], "run-to-run term"),
    "schedule_footprint": (["--steps", "300", "--runs", "1"], "footprint"),
    "starting_heaps": (["--steps", "10", "--cells", "jax", "--heaps", "0,1000"], "promotions per step:"),
    "server_effect": (["--backend", "jax", "--workload", "mlp", "--steps", "20", "--groups", "3", "--per-group", "2",
                       "--batch-size", "32"], "within groups"),
    "user_loop_probe": (["--steps", "300", "--k", "1", "10"], "K"),
    "warm_workers": (["--backends", "jax", "--workload", "mlp", "--steps", "20", "--repeats", "3", "--rounds", "1",
                      "--batch-size", "32"], "a repeat besides its steps"),
}
# what a script writes into the repository at its smoke size, which must come out as committed
REWRITES = {"run_term": BENCHMARKS / "run_term" / "estimate.json"}


def test_every_benchmark_is_run_by_some_test():
    """A script in benchmarks/ is run here, or started as a process by a test that holds its
    figures: its file name as a path in that test's code (`ROOT / "benchmarks" / "x.py"`)."""
    tests = " ".join(p.read_text() for p in (ROOT / "tests").glob("test_*.py") if p.name != pathlib.Path(__file__).name)
    unrun = [p.stem for p in BENCHMARKS.glob("*.py") if p.stem not in SMOKE and f'"{p.name}"' not in tests]
    assert not unrun, f"benchmarks no test runs: {unrun}: add a smoke size to SMOKE"


@pytest.mark.e2e
@pytest.mark.parametrize("name", sorted(SMOKE))
def test_the_benchmark_runs_at_its_smoke_size(name, tmp_path):
    args, shape = SMOKE[name]
    written = REWRITES.get(name)
    before = written.read_bytes() if written else None
    proc = subprocess.run([sys.executable, str(BENCHMARKS / f"{name}.py"), *args], capture_output=True, text=True,
                          timeout=900, cwd=tmp_path)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    assert shape.lower() in proc.stdout.lower(), proc.stdout[-2000:]
    if written:
        assert written.read_bytes() == before, f"{name} rewrote {written.name} otherwise than committed"
